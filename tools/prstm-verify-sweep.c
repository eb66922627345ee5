/* prstm-verify-sweep.c: a randomised verification campaign: random batches of every workload, run whole, chunked or streamed, each checked by its certificate, with a one-line repro for any failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prstm.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage: prstm-verify-sweep [options]\n"
    "\n"
    "Runs random batches of every built-in workload, each on random engine\n"
    "options, through one of the runners below, and checks every run with its\n"
    "verification certificate (the serial replay of its commit order) and, where\n"
    "the run is one batch in postpone mode, the workload's invariant. Prints one\n"
    "line per failed\n"
    "case, starting with the command that repeats it alone.\n"
    "\n"
    "options:\n"
    "  --cases N          cases to run (default 200)\n"
    "  --seconds S        stop starting cases after S seconds (default: no limit)\n"
    "  --seed S           the campaign's seed (default 1); case K of seed S is\n"
    "                     always the same case\n"
    "  --case K           run case K of the seed alone (what a repro line says)\n"
    "  --first K          start at case K (default 0)\n"
    "  --backend cpu|gpu  where every case runs (default cpu); gpu fails when no\n"
    "                     GPU is usable\n"
    "  --runners LIST     comma-separated runners to draw from (default all):\n"
    "                       run      the batch in one execution\n"
    "                       chunked  the batch in chunks of a random size\n"
    "                       stream   the batch cut into batches of random sizes,\n"
    "                                submitted to a stream with random units\n"
    "                       multi    the batch on 1 to 4 units, each owning a\n"
    "                                range of the locks (backend multi: GPUs\n"
    "                                where usable, sets of CPU threads elsewhere;\n"
    "                                half the cases with a partitioned state)\n"
    "                       hetero   the batch co-executed by two units on\n"
    "                                replicas (backend hetero: the CPU and the\n"
    "                                GPU, or two sets of CPU threads; half the\n"
    "                                cases shared in rounds; a random conflict\n"
    "                                policy; half the cases at a fixed period)\n"
    "                     --backend does not apply to multi and hetero, which\n"
    "                     take their units as the library does\n"
    "  --workloads LIST   comma-separated workloads to draw from (default all\n"
    "                     built-in ones)\n"
    "  --max-rows N       the most rows of a case's batch (default 4000)\n"
    "  --tamper           check the campaign itself: change one final word of\n"
    "                     every case before it is verified, so every case must\n"
    "                     fail (exit 0 only when all did)\n"
    "  --verbose          one line per case, passed or not\n"
    "  --help             show this help and exit\n"
    "\n"
    "exit status: 0 every case passed, 1 a case failed (or, with --tamper, one\n"
    "passed), 2 bad usage.\n";

/* ---- deterministic randomness: every case from (seed, index) ---- */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint64_t below(uint64_t *s, uint64_t n) { return n ? splitmix(s) % n : 0; }
static double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) / 9007199254740992.0; }
/* Between lo and hi, log-uniformly: small values as often as large ones. */
static uint64_t log_between(uint64_t *s, uint64_t lo, uint64_t hi) {
  if (hi <= lo) return lo;
  double v = exp(log((double)lo) + unit(s) * (log((double)hi + 1.0) - log((double)lo)));
  uint64_t r = (uint64_t)v;
  return r < lo ? lo : r > hi ? hi : r;
}

/* ---- a case ---- */

typedef enum { RUNNER_RUN, RUNNER_CHUNKED, RUNNER_STREAM, RUNNER_MULTI, RUNNER_HETERO, RUNNER_COUNT } runner_kind;
static const char *const runner_names[RUNNER_COUNT] = {"run", "chunked", "stream", "multi", "hetero"};

typedef struct sweep_case {
  uint64_t seed, index;
  const prstm_workload *wl;
  prstm_state_spec state;
  prstm_generate_spec gen;
  prstm_options opt;
  runner_kind runner;
  unsigned stream_batches; /* stream: the batch is cut into this many */
  char what[512];          /* the case in words */
} sweep_case;

typedef struct sweep_settings {
  uint64_t seed, cases, first, max_rows;
  double seconds;
  prstm_backend backend;
  unsigned runners;   /* bit r: runner r may be drawn */
  unsigned workloads; /* bit i: built-in workload i may be drawn */
  int single, tamper, verbose;
} sweep_settings;

static void set_knob(const prstm_workload *wl, double *params, const char *name, double v) {
  int i = prstm_param_find(wl, name);
  if (i >= 0) params[i] = v;
}

/* Random mix weights over the named types, at least one of them positive. */
static void random_mix(prstm_generate_spec *g, uint64_t *s, const char *const *names, unsigned n) {
  g->nmix = 0;
  for (unsigned i = 0; i < n; i++) {
    double w = unit(s) < 0.25 ? 0.0 : unit(s);
    g->mix_names[g->nmix] = names[i];
    g->mix_weights[g->nmix++] = w;
  }
  g->mix_weights[below(s, n)] += 0.5;
}

/* The workload's state and batch knobs: small states, so that rows meet on
 * the same words (contention) and on each other's semantic dependencies. */
static void draw_workload(sweep_case *c, uint64_t *s, uint64_t rows) {
  const prstm_workload *wl = c->wl;
  prstm_state_spec_init(wl, &c->state);
  prstm_generate_spec_init(wl, &c->gen);
  c->gen.seed = splitmix(s);
  c->gen.presorted = below(s, 4) == 0;
  double *sp = c->state.params;
  set_knob(wl, sp, "seed", (double)below(s, 1000000));
  if (strcmp(wl->name, "bank") == 0) {
    c->state.accounts = log_between(s, 1, 2000);
    c->state.initial_balance = below(s, 3) == 0 ? 0 : below(s, 200);
    c->gen.transactions = rows;
    static const char *const types[] = {"deposit", "withdraw", "transfer"};
    random_mix(&c->gen, s, types, 3);
    /* Now and then a few totals: snapshot queries of every account, run on
     * the host before a whole run and through the STM in chunks and streams. */
    if (below(s, 4) == 0) {
      c->gen.mix_names[c->gen.nmix] = "total";
      c->gen.mix_weights[c->gen.nmix++] = 0.001 + unit(s) * 0.01;
    }
    c->gen.accounts_per_tx = below(s, 4) == 0 ? (unsigned)log_between(s, 1, 24) : 2;
    c->gen.amount_min = 1 + below(s, 10);
    c->gen.amount_max = c->gen.amount_min + below(s, 100);
    c->gen.read_only = below(s, 2) ? unit(s) * 0.3 : -1.0;
    c->gen.semantic_ratio = unit(s) * 0.6;
  } else if (strcmp(wl->name, "vacation") == 0) {
    set_knob(wl, sp, "customers", (double)log_between(s, 20, 2000));
    set_knob(wl, sp, "room_types", (double)log_between(s, 1, 40));
    set_knob(wl, sp, "rooms", (double)log_between(s, 1, 30));
    set_knob(wl, sp, "spacing", (double)(2 + below(s, 7)));
    set_knob(wl, sp, "slots", (double)(1 + below(s, 4)));
    set_knob(wl, sp, "booked", unit(s));
    set_knob(wl, sp, "sold_out", 0.1 + 0.5 * unit(s));
    c->gen.transactions = rows;
    static const char *const types[] = {"book", "cancel", "free_rooms"};
    random_mix(&c->gen, s, types, 3);
    c->gen.semantic_ratio = unit(s) * 0.5;
  } else if (strcmp(wl->name, "kmeans") == 0) {
    uint64_t iterations = 1 + below(s, 6);
    uint64_t points = log_between(s, 1, rows / iterations ? rows / iterations : 1);
    set_knob(wl, sp, "points", (double)points);
    set_knob(wl, sp, "clusters", (double)log_between(s, 1, points < 40 ? points : 40));
    set_knob(wl, sp, "iterations", (double)iterations);
    set_knob(wl, sp, "coordinate_max", (double)below(s, 1000));
  } else if (strcmp(wl->name, "skiplist") == 0) {
    uint64_t initial = below(s, 3) == 0 ? 0 : log_between(s, 1, 500);
    set_knob(wl, sp, "initial_keys", (double)initial);
    /* Exactly one node slot per row beyond the initial keys: an insert that
     * claims a slot by a wrong row number finds it taken. */
    set_knob(wl, sp, "capacity", (double)(initial + rows > 0 ? initial + rows : 1));
    /* At least one fresh key per row, which the generator asks for. */
    set_knob(wl, sp, "key_range", (double)(initial + rows + below(s, 3 * rows + 1)));
    set_knob(wl, sp, "levels", (double)(1 + below(s, 6)));
    set_knob(wl, sp, "branching", (double)(2 + below(s, 7)));
    c->gen.transactions = rows;
    static const char *const types[] = {"insert", "delete", "search"};
    random_mix(&c->gen, s, types, 3);
    c->gen.semantic_ratio = unit(s) * 0.5;
  } else if (strcmp(wl->name, "graph") == 0) {
    uint64_t vertices = log_between(s, 2, rows > 2 ? rows : 2);
    uint64_t degree = 1 + below(s, 16);
    set_knob(wl, sp, "vertices", (double)vertices);
    set_knob(wl, sp, "max_degree", (double)degree);
    set_knob(wl, sp, "edges", (double)below(s, vertices * degree + 1));
    set_knob(wl, sp, "max_value", (double)log_between(s, 1, 1000));
    c->gen.read_only = below(s, 2) ? unit(s) * 0.5 : -1.0;
  } else if (strcmp(wl->name, "ycsb") == 0) {
    set_knob(wl, sp, "records", (double)log_between(s, 1, 2000));
    set_knob(wl, sp, "fields", (double)(1 + below(s, 10)));
    c->gen.transactions = rows;
    const uint64_t ops = log_between(s, 1, 32);
    double *gp = c->gen.params;
    set_knob(wl, gp, "ops", (double)ops);
    set_knob(wl, gp, "writes", (double)below(s, ops + 1));
    set_knob(wl, gp, "blind", (double)below(s, 2));
    set_knob(wl, gp, "skew", below(s, 2) ? unit(s) * 1.5 : 0.0);
    c->gen.read_only = below(s, 2) ? unit(s) * 0.5 : -1.0;
  } else {
    /* A workload this campaign does not know: its generator's defaults. */
    c->gen.transactions = rows;
  }
}

/* Draws case `index` of the campaign: the same case for the same seed and
 * settings, whatever cases ran before it. */
static int draw_case(const sweep_settings *set, uint64_t index, sweep_case *c) {
  memset(c, 0, sizeof *c);
  c->seed = set->seed;
  c->index = index;
  uint64_t s = set->seed * 0xd1342543de82ef95ull + index * 0x9e3779b97f4a7c15ull + 1;
  const prstm_workload *pool[32];
  unsigned npool = 0;
  for (unsigned i = 0; prstm_workload_at(i) && npool < 32; i++)
    if ((set->workloads >> i) & 1u) pool[npool++] = prstm_workload_at(i);
  runner_kind runners[RUNNER_COUNT];
  unsigned nrunners = 0;
  for (unsigned r = 0; r < RUNNER_COUNT; r++)
    if ((set->runners >> r) & 1u) runners[nrunners++] = (runner_kind)r;
  if (!npool || !nrunners) return -1;
  c->wl = pool[below(&s, npool)];
  c->runner = runners[below(&s, nrunners)];
  uint64_t rows = log_between(&s, 1, set->max_rows);
  draw_workload(c, &s, rows);

  prstm_options_init(&c->opt);
  c->opt.backend = set->backend;
  c->opt.verify = 1;
  c->opt.watchdog_s = 120;
  c->opt.chunk_rows = 0;
  if (set->backend == PRSTM_BACKEND_GPU)
    c->opt.threads = below(&s, 8) == 0 ? 0 : (uint32_t)log_between(&s, 1, 16384);
  else
    c->opt.threads = (uint32_t)log_between(&s, 1, 96);
  c->opt.lock_coverage = 1u << below(&s, 11);
  if (below(&s, 10) == 0) {
    c->opt.semantic = PRSTM_SEMANTIC_RETRY;
    c->opt.retry_limit = (uint32_t)below(&s, 20);
  }
  /* The delta path as often as the STM alone: a batch it refuses still
   * runs, through the STM. */
  const unsigned deltas = (unsigned)below(&s, 3);
  c->opt.deltas = deltas == 0 ? PRSTM_DELTAS_AUTO : deltas == 1 ? PRSTM_DELTAS_ON : PRSTM_DELTAS_OFF;
  if (c->runner == RUNNER_CHUNKED) c->opt.chunk_rows = log_between(&s, 1, rows > 1 ? rows - 1 : 1);
  if (c->runner == RUNNER_STREAM) {
    c->stream_batches = (unsigned)(1 + below(&s, 8));
    c->opt.chunk_rows = below(&s, 3) == 0 ? 0 : log_between(&s, 1, rows);
  }
  /* Several units run one whole batch: the multi backend on 1 to 4 (each
   * owning a range of the locks, the rows that span ranges on the first,
   * every unit a replica or, half the time, a partitioned state whose rows
   * across ranges run on the host), the hetero backend on two replicas
   * reconciled after every round. */
  if (c->runner == RUNNER_MULTI) {
    c->opt.backend = PRSTM_BACKEND_MULTI;
    c->opt.units = (uint32_t)(1 + below(&s, 4));
    c->opt.partition_state = (int)below(&s, 2);
  }
  if (c->runner == RUNNER_HETERO) c->opt.backend = PRSTM_BACKEND_HETERO;
  /* Their units may be CPU threads on any host (more units than GPUs, or
   * the hetero backend's CPU unit), so they take the CPU's thread counts. */
  if (c->runner == RUNNER_MULTI || c->runner == RUNNER_HETERO) c->opt.threads = (uint32_t)log_between(&s, 1, 96);
  /* Half the hetero cases share their batch in rounds, whatever the
   * scheduler would choose, so that reconciliation in both orders and the
   * conflict policies run; the policy is drawn for every hetero case, and
   * half of them synchronise at a fixed period of 1 row to the whole batch.
   * These draws come last, so the knobs above are those of earlier
   * campaigns. */
  static const char *const policy_names[] = {"gpu-invalidation", "favour-fastest", "balanced"};
  if (c->runner == RUNNER_HETERO) {
    c->opt.hetero_rounds = (int)below(&s, 2);
    c->opt.hetero_policy = (prstm_hetero_policy)below(&s, 3);
    c->opt.hetero_period = below(&s, 2) ? log_between(&s, 1, rows) : 0;
  }
  char unit_knobs[96] = "";
  if (c->runner == RUNNER_MULTI)
    snprintf(unit_knobs, sizeof unit_knobs, ", %u units%s", c->opt.units, c->opt.partition_state ? " partitioned" : "");
  if (c->runner == RUNNER_HETERO)
    snprintf(unit_knobs, sizeof unit_knobs, ", %spolicy %s, period %llu", c->opt.hetero_rounds ? "rounds, " : "",
             policy_names[c->opt.hetero_policy], (unsigned long long)c->opt.hetero_period);
  snprintf(c->what, sizeof c->what,
           "%s, %s%s, %u threads, lock_coverage %u, %s%s, deltas %s, chunk_rows %llu, %u stream batches, "
           "generate seed %llu, semantic_ratio %.2f, read_only %.2f, %llu rows asked",
           c->wl->name, runner_names[c->runner], unit_knobs, c->opt.threads, c->opt.lock_coverage,
           c->opt.semantic == PRSTM_SEMANTIC_RETRY ? "retry" : "postpone", c->gen.presorted ? ", presorted" : "",
           deltas == 0   ? "auto"
           : deltas == 1 ? "on"
                         : "off",
           (unsigned long long)c->opt.chunk_rows, c->stream_batches, (unsigned long long)c->gen.seed,
           c->gen.semantic_ratio, c->gen.read_only, (unsigned long long)rows);
  return 0;
}

/* ---- running a case ---- */

typedef struct case_outcome {
  int passed;
  int skipped; /* the generator refused the drawn knobs: not a failure of the engine */
  uint64_t rows, committed, abandoned, failed;
  char why[1024];
} case_outcome;

static int fail(case_outcome *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(case_outcome *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->why, sizeof o->why, fmt, ap);
  va_end(ap);
  o->passed = 0;
  return -1;
}

/* Changes one final word (--tamper), which the certificate must catch. */
static void tamper_state(prstm_engine *e) {
  uint64_t n = 0;
  prstm_word *w = (prstm_word *)prstm_engine_state(e, &n);
  if (n) w[n / 2] ^= 1;
}

static void count_outcomes(case_outcome *o, const prstm_batch *b) {
  for (uint64_t i = 0; i < prstm_batch_size(b); i++) {
    prstm_status st;
    prstm_batch_outcome(b, i, &st, NULL, NULL);
    o->committed += st == PRSTM_COMMITTED;
    o->abandoned += st == PRSTM_ABANDONED;
    o->failed += st == PRSTM_FAILED;
  }
  o->rows += prstm_batch_size(b);
}

/* After each round: its outcomes counted, and its certificate checked
 * before the next round replaces the engine's initial state. */
typedef struct round_check {
  const sweep_settings *set;
  const sweep_case *c;
  prstm_engine *e;
  case_outcome *o;
} round_check;

static int check_round(unsigned round, prstm_batch *b, const prstm_results *r, void *user) {
  round_check *k = user;
  count_outcomes(k->o, b);
  /* A case of several units that ran on one backend alone has tested
   * nothing of what it claims. */
  const prstm_options *opt = &k->c->opt;
  if ((opt->backend == PRSTM_BACKEND_MULTI || opt->backend == PRSTM_BACKEND_HETERO) && r->backend != opt->backend)
    return fail(k->o, "round %u: ran on backend %d, not the one asked (%d)", round, (int)r->backend, (int)opt->backend),
           1;
  if (opt->backend == PRSTM_BACKEND_MULTI && r->units != opt->units)
    return fail(k->o, "round %u: ran on %u units, not %u", round, r->units, opt->units), 1;
  if (k->set->tamper) tamper_state(k->e);
  prstm_verify_report rep;
  if (prstm_engine_verify(k->e, b, &rep))
    return fail(k->o, "round %u: verification could not run: %s", round, prstm_engine_error(k->e)), 1;
  if (!rep.ok) return fail(k->o, "round %u: verification failed: %s", round, rep.message), 1;
  if (round >= 500) return fail(k->o, "no fixed point after 500 rounds"), 1;
  return 0;
}

/* The whole batch through the library's rounds driver (prstm_engine_run,
 * chunked or not by the options, then each later round of a multi-round
 * workload), every round verified; the workload's invariant on the last. */
static int run_batch(const sweep_settings *set, const sweep_case *c, prstm_engine *e, prstm_batch *first,
                     case_outcome *o) {
  round_check k = {set, c, e, o};
  prstm_batch *b = first;
  prstm_results total;
  int rc = prstm_engine_run_rounds(e, &b, check_round, &k, &total, NULL);
  if (rc < 0) rc = fail(o, "the run failed: %s", prstm_engine_error(e));
  /* Retry mode abandons on a schedule, and a workload's invariant may rest
   * on every row that can commit committing (k-means' sequential result). */
  int ok = 0;
  char msg[512] = "";
  if (!rc && c->opt.semantic == PRSTM_SEMANTIC_POSTPONE &&
      prstm_engine_check_invariant(e, b, &ok, msg, sizeof msg) == 0 && !ok)
    rc = fail(o, "invariant violated: %s", msg);
  if (b != first) prstm_batch_destroy(b);
  return rc;
}

/* The batch cut into c->stream_batches consecutive batches of random sizes,
 * submitted to one stream, closed and verified as one. */
static int run_stream(const sweep_settings *set, const sweep_case *c, prstm_engine *e, const prstm_batch *whole,
                      case_outcome *o) {
  uint64_t n = prstm_batch_size(whole), s = c->gen.seed ^ 0x5eed5eedull;
  unsigned k = c->stream_batches;
  prstm_batch **parts = calloc(k, sizeof *parts);
  if (!parts) return fail(o, "out of memory");
  int rc = 0;
  prstm_stream *stream = NULL;
  if (prstm_stream_open(e, &stream)) {
    rc = fail(o, "the stream could not open: %s", prstm_engine_error(e));
    goto out;
  }
  /* Every part takes the whole batch's width, which a stream's first batch
   * sets for all that follow: a row's fixed arguments, and an address list's
   * count and entries. */
  static prstm_word args[PRSTM_MAX_COLUMNS];
  unsigned width = 0;
  for (uint64_t i = 0; i < n; i++) {
    const prstm_type_desc *d = &c->wl->types[prstm_batch_type(whole, i)];
    uint64_t w = d->nargs;
    if (d->nargs && d->args[d->nargs - 1].kind == PRSTM_ARG_ADDRESS_LIST) w += prstm_batch_arg(whole, i, d->nargs - 1);
    if (w > PRSTM_MAX_COLUMNS) w = PRSTM_MAX_COLUMNS;
    if (w > width) width = (unsigned)w;
  }
  uint64_t at = 0;
  for (unsigned p = 0; p < k; p++) {
    uint64_t left = n - at, take = p + 1 == k ? left : below(&s, left + 1);
    if (prstm_batch_create(&parts[p], c->wl) || prstm_batch_reserve(parts[p], take, width)) {
      rc = fail(o, "out of memory");
      goto out;
    }
    for (uint64_t i = at; i < at + take; i++) {
      for (unsigned col = 0; col < width; col++) args[col] = prstm_batch_arg(whole, i, col);
      if (prstm_batch_append(parts[p], prstm_batch_type(whole, i), args, width)) {
        rc = fail(o, "out of memory");
        goto out;
      }
    }
    at += take;
    if (prstm_stream_submit(stream, parts[p])) {
      rc = fail(o, "batch %u of the stream was refused: %s", p, prstm_stream_error(stream));
      goto out;
    }
  }
  if (prstm_stream_close(stream, NULL)) {
    rc = fail(o, "the stream's close failed: %s", prstm_stream_error(stream));
    goto out;
  }
  for (unsigned p = 0; p < k; p++) count_outcomes(o, parts[p]);
  if (set->tamper) tamper_state(e);
  prstm_verify_report rep;
  if (prstm_stream_verify(stream, &rep)) {
    rc = fail(o, "verification could not run: %s", prstm_stream_error(stream));
    goto out;
  }
  if (!rep.ok) rc = fail(o, "verification failed: %s", rep.message);
out:
  prstm_stream_destroy(stream);
  for (unsigned p = 0; p < k; p++) prstm_batch_destroy(parts[p]);
  free(parts);
  return rc;
}

static void run_case(const sweep_settings *set, const sweep_case *c, case_outcome *o) {
  memset(o, 0, sizeof *o);
  o->passed = 1;
  char err[512] = "";
  prstm_engine *e = NULL;
  prstm_batch *b = NULL;
  if (prstm_engine_create(&e, c->wl, &c->opt)) {
    fail(o, "the engine could not be made: %s", prstm_engine_error(e));
    goto out;
  }
  if (prstm_engine_init_state(e, &c->state)) {
    /* Knobs a workload refuses are the draw's mistake, not the engine's. */
    o->skipped = 1;
    snprintf(o->why, sizeof o->why, "state refused: %s", prstm_engine_error(e));
    goto out;
  }
  if (prstm_batch_create(&b, c->wl)) {
    fail(o, "out of memory");
    goto out;
  }
  if (c->wl->generate(&c->gen, &c->state, b, err, sizeof err) || prstm_batch_size(b) == 0) {
    o->skipped = 1;
    snprintf(o->why, sizeof o->why, "generator refused: %s", err);
    goto out;
  }
  if (c->runner == RUNNER_STREAM)
    run_stream(set, c, e, b, o);
  else
    run_batch(set, c, e, b, o);
out:
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

/* ---- the command line ---- */

/* A comma-separated list of names, each of which must be in `names`. */
static int parse_names(const char *arg, const char *const *names, unsigned n, unsigned *bits, const char *option) {
  *bits = 0;
  char buf[1024];
  if (strlen(arg) >= sizeof buf) {
    fprintf(stderr, "prstm-verify-sweep: %s: list too long\n", option);
    return -1;
  }
  strcpy(buf, arg);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    unsigned i = 0;
    while (i < n && strcmp(names[i], tok) != 0) i++;
    if (i == n) {
      fprintf(stderr, "prstm-verify-sweep: %s: unknown name '%s'\n", option, tok);
      return -1;
    }
    *bits |= 1u << i;
  }
  if (!*bits) {
    fprintf(stderr, "prstm-verify-sweep: %s: no names given\n", option);
    return -1;
  }
  return 0;
}

static int parse_count(const char *arg, uint64_t *out, const char *option, uint64_t min) {
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(arg, &end, 10);
  if (errno || !*arg || *end || arg[0] == '-' || v < min) {
    fprintf(stderr, "prstm-verify-sweep: %s: expected a whole number of at least %llu, got '%s'\n", option,
            (unsigned long long)min, arg);
    return -1;
  }
  *out = v;
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  sweep_settings set;
  memset(&set, 0, sizeof set);
  set.seed = 1;
  set.cases = 200;
  set.max_rows = 4000;
  set.backend = PRSTM_BACKEND_CPU;
  set.runners = (1u << RUNNER_COUNT) - 1;
  const char *workload_names[32];
  unsigned nworkloads = 0;
  for (unsigned i = 0; prstm_workload_at(i) && nworkloads < 32; i++)
    workload_names[nworkloads++] = prstm_workload_at(i)->name;
  set.workloads = nworkloads >= 32 ? 0xffffffffu : (1u << nworkloads) - 1;

  static const struct option longopts[] = {{"cases", required_argument, NULL, 'n'},
                                           {"seconds", required_argument, NULL, 's'},
                                           {"seed", required_argument, NULL, 'S'},
                                           {"case", required_argument, NULL, 'k'},
                                           {"first", required_argument, NULL, 'f'},
                                           {"backend", required_argument, NULL, 'b'},
                                           {"runners", required_argument, NULL, 'r'},
                                           {"workloads", required_argument, NULL, 'w'},
                                           {"max-rows", required_argument, NULL, 'm'},
                                           {"tamper", no_argument, NULL, 't'},
                                           {"verbose", no_argument, NULL, 'v'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  opterr = 0;
  int opt;
  uint64_t value = 0;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    switch (opt) {
      case 'n':
        if (parse_count(optarg, &set.cases, "--cases", 1)) return EXIT_USAGE;
        break;
      case 's':
        if (parse_count(optarg, &value, "--seconds", 1)) return EXIT_USAGE;
        set.seconds = (double)value;
        break;
      case 'S':
        if (parse_count(optarg, &set.seed, "--seed", 0)) return EXIT_USAGE;
        break;
      case 'k':
        if (parse_count(optarg, &set.first, "--case", 0)) return EXIT_USAGE;
        set.single = 1;
        break;
      case 'f':
        if (parse_count(optarg, &set.first, "--first", 0)) return EXIT_USAGE;
        break;
      case 'b':
        if (strcmp(optarg, "cpu") == 0)
          set.backend = PRSTM_BACKEND_CPU;
        else if (strcmp(optarg, "gpu") == 0)
          set.backend = PRSTM_BACKEND_GPU;
        else {
          fprintf(stderr, "prstm-verify-sweep: --backend: expected cpu or gpu, got '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case 'r':
        if (parse_names(optarg, runner_names, RUNNER_COUNT, &set.runners, "--runners")) return EXIT_USAGE;
        break;
      case 'w':
        if (parse_names(optarg, workload_names, nworkloads, &set.workloads, "--workloads")) return EXIT_USAGE;
        break;
      case 'm':
        if (parse_count(optarg, &set.max_rows, "--max-rows", 1)) return EXIT_USAGE;
        break;
      case 't':
        set.tamper = 1;
        break;
      case 'v':
        set.verbose = 1;
        break;
      case 'h':
        fputs(usage_text, stdout);
        return EXIT_OK;
      case ':':
        fprintf(stderr, "prstm-verify-sweep: option %s needs a value (see --help)\n", argv[optind - 1]);
        return EXIT_USAGE;
      default:
        fprintf(stderr, "prstm-verify-sweep: unknown option '%s' (see --help)\n", argv[optind - 1]);
        return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "prstm-verify-sweep: unexpected argument '%s' (see --help)\n", argv[optind]);
    return EXIT_USAGE;
  }
  if (set.backend == PRSTM_BACKEND_GPU) {
    char why[256];
    if (!prstm_gpu_available(prstm_workload_at(0), why, sizeof why)) {
      fprintf(stderr, "prstm-verify-sweep: --backend gpu: no usable GPU: %s\n", why);
      return EXIT_FAILED;
    }
  }
  if (set.single) set.cases = 1;

  const double start = now_s();
  uint64_t ran = 0, passed = 0, failed = 0, skipped = 0, rows = 0;
  uint64_t by_runner[RUNNER_COUNT] = {0};
  /* One past the last case started: --seconds may stop before them all. */
  uint64_t end = set.first;
  for (uint64_t k = set.first; k < set.first + set.cases; k++) {
    if (set.seconds > 0 && now_s() - start > set.seconds) break;
    end = k + 1;
    sweep_case c;
    if (draw_case(&set, k, &c)) {
      fprintf(stderr, "prstm-verify-sweep: nothing to draw from\n");
      return EXIT_USAGE;
    }
    case_outcome o;
    run_case(&set, &c, &o);
    if (o.skipped) {
      skipped++;
      if (set.verbose) printf("skip  case %llu: %s: %s\n", (unsigned long long)k, c.what, o.why);
      continue;
    }
    ran++;
    by_runner[c.runner]++;
    rows += o.rows;
    if (o.passed) {
      passed++;
      if (set.verbose)
        printf("ok    case %llu: %s: %llu rows, %llu committed, %llu abandoned, %llu failed\n", (unsigned long long)k,
               c.what, (unsigned long long)o.rows, (unsigned long long)o.committed, (unsigned long long)o.abandoned,
               (unsigned long long)o.failed);
      continue;
    }
    failed++;
    if (!set.tamper || set.verbose)
      printf("FAIL  %s --seed %llu --case %llu --backend %s --max-rows %llu%s: %s: %s\n", argv[0],
             (unsigned long long)set.seed, (unsigned long long)k, set.backend == PRSTM_BACKEND_GPU ? "gpu" : "cpu",
             (unsigned long long)set.max_rows, set.tamper ? " --tamper" : "", c.what, o.why);
    fflush(stdout);
  }
  printf(
      "prstm-verify-sweep: seed %llu, cases %llu to %llu on the %s: %llu verified (%llu run, %llu chunked, %llu "
      "stream, %llu multi, %llu hetero; %llu rows), %llu passed, %llu failed, %llu skipped (knobs a generator "
      "refused), %.1f s\n",
      (unsigned long long)set.seed, (unsigned long long)set.first,
      (unsigned long long)(end > set.first ? end - 1 : set.first), set.backend == PRSTM_BACKEND_GPU ? "GPU" : "CPU",
      (unsigned long long)ran, (unsigned long long)by_runner[RUNNER_RUN], (unsigned long long)by_runner[RUNNER_CHUNKED],
      (unsigned long long)by_runner[RUNNER_STREAM], (unsigned long long)by_runner[RUNNER_MULTI],
      (unsigned long long)by_runner[RUNNER_HETERO], (unsigned long long)rows, (unsigned long long)passed,
      (unsigned long long)failed, (unsigned long long)skipped, now_s() - start);
  if (set.tamper) {
    if (passed)
      printf("prstm-verify-sweep: --tamper: %llu tampered cases passed their certificate\n",
             (unsigned long long)passed);
    return passed == 0 && ran > 0 ? EXIT_OK : EXIT_FAILED;
  }
  return failed == 0 && ran > 0 ? EXIT_OK : EXIT_FAILED;
}
