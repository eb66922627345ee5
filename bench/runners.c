/* runners.c: the ways prstm-bench executes one point's batch (the engine on either backend and mode, the ceiling kernel, the serial baselines), each run checked, and a point run by every runner. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

const char *const runner_names[R_COUNT] = {"gpu_postpone", "gpu_retry", "gpu_ceiling",   "cpu_postpone", "cpu_retry",
                                           "cpu_serial",   "cpu_plain", "gpu_stm",       "gpu_deltas",   "cpu_stm",
                                           "cpu_deltas",   "hetero",    "hetero_rounds", "multi"};
const char *const row_status_names[] = {"not_run", "ok", "unavailable", "failed", "timeout", "skipped", "incomplete"};

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CSV fields never hold a comma, a quote or a line break, so that every
 * reader (awk -F, in plot.sh, gnuplot) splits rows the same way. */
void bench_csv_clean(char *s) {
  for (; *s; s++)
    if (*s == ',' || *s == '"')
      *s = ';';
    else if (*s == '\n' || *s == '\r')
      *s = ' ';
}

void row_note(bench_row *row, const char *fmt, ...) {
  size_t used = strlen(row->note);
  if (used + 3 >= sizeof row->note) return;
  if (used) {
    strcat(row->note, "; ");
    used += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(row->note + used, sizeof row->note - used, fmt, ap);
  va_end(ap);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Checks one round's table after a run: no row left pending, and the counts
 * the engine reported are the counts the table holds. */
static int check_outcomes(const prstm_batch *b, const prstm_results *r, char *msg, size_t msglen) {
  uint64_t n = prstm_batch_size(b), count[4] = {0, 0, 0, 0};
  for (uint64_t i = 0; i < n; i++) {
    prstm_status st;
    prstm_batch_outcome(b, i, &st, NULL, NULL);
    count[(unsigned)st & 3u]++;
  }
  if (count[PRSTM_PENDING] || count[PRSTM_COMMITTED] != r->committed || count[PRSTM_ABANDONED] != r->abandoned ||
      count[PRSTM_FAILED] != r->failed || r->transactions != n) {
    snprintf(msg, msglen,
             "outcomes: the table holds %llu pending / %llu committed / %llu abandoned / %llu failed of %llu; the "
             "run reported %llu / %llu / %llu of %llu",
             (unsigned long long)count[PRSTM_PENDING], (unsigned long long)count[PRSTM_COMMITTED],
             (unsigned long long)count[PRSTM_ABANDONED], (unsigned long long)count[PRSTM_FAILED], (unsigned long long)n,
             (unsigned long long)r->committed, (unsigned long long)r->abandoned, (unsigned long long)r->failed,
             (unsigned long long)r->transactions);
    return 0;
  }
  return 1;
}

/* GPU memory of the table alone, per transaction: what the run allocated
 * less the state, the lock array and the progress words (the backend's own
 * accounting in engine/backend_gpu.cu; a workload with counted adds keeps
 * a counter beside each lock). */
static double table_bytes_per_tx(const prstm_workload *wl, const prstm_results *r, uint64_t nwords, uint32_t coverage) {
  if (!r->gpu_bytes || !r->transactions) return -1;
  const uint64_t nlocks = (nwords + coverage - 1) / coverage;
  const uint64_t lock_words = wl->uses_add == PRSTM_ADDS_COUNTED ? 2 * nlocks : nlocks;
  uint64_t other = 8 * (nwords + lock_words) + 8 * STM_Q_WORDS;
  if (other >= r->gpu_bytes) return -1;
  return (double)(r->gpu_bytes - other) / (double)r->transactions;
}

/* One engine run of a point: the configured batch and then, for a
 * multi-round workload, each round it asks for, all on one engine whose
 * state was freshly initialised. Every round's outcomes are checked, then the
 * workload's invariant on the final state. Returns 0 with the run's sums,
 * row->status then being ROW_INCOMPLETE when only retry mode's abandoned
 * transactions stand between the run and the invariant; or the engine's
 * error code, or PRSTM_EINVAL for a failed check, with the reason in
 * row->note. */
typedef struct engine_run {
  prstm_results sum;
  double kernel_s, e2e_s;
  unsigned rounds;
  int verify_ok; /* -1: not verified */
  char verify_msg[600];
} engine_run;

/* Copies a run's counts, thread count and device into its CSV row. */
static void row_take_counts(bench_row *row, const engine_run *run) {
  row->threads = run->sum.threads;
  row->transactions = run->sum.transactions;
  row->committed = run->sum.committed;
  row->abandoned = run->sum.abandoned;
  row->failed = run->sum.failed;
  row->aborts = run->sum.aborts;
  row->postponements = run->sum.postponements;
  row->rounds = run->rounds;
  snprintf(row->device, sizeof row->device, "%s", run->sum.device);
}

/* What engine_run_once checks after each round, before the next replaces it. */
typedef struct round_check {
  const bench_ctx *c;
  const bench_point *p;
  prstm_engine *e;
  uint64_t nwords;
  int verify;
  bench_row *row;
  engine_run *out;
} round_check;

static int check_round(unsigned round, prstm_batch *batch, const prstm_results *r, void *user) {
  round_check *k = user;
  char err[1024] = "";
  if (!check_outcomes(batch, r, err, sizeof err)) {
    k->row->status = ROW_FAILED;
    k->row->outcomes = "bad";
    row_note(k->row, "round %u: %s", round, err);
    return PRSTM_EINVAL;
  }
  if (round == 0)
    k->row->table_bytes_per_tx = table_bytes_per_tx(prstm_engine_workload(k->e), r, k->nwords, k->p->lock_coverage);
  if (!k->verify) return 0;
  prstm_verify_report v;
  if (prstm_engine_verify(k->e, batch, &v)) {
    k->row->status = ROW_FAILED;
    row_note(k->row, "verification could not run: %s", prstm_engine_error(k->e));
    return PRSTM_EINVAL;
  }
  k->out->verify_ok = v.ok;
  snprintf(k->out->verify_msg, sizeof k->out->verify_msg, "round %u: %.560s", round, v.message);
  return v.ok ? 0 : 1; /* a failed certificate ends the rounds; the row reports it */
}

static int engine_run_once(const bench_ctx *c, const bench_point *p, runner_id id, prstm_backend backend,
                           prstm_semantic_mode mode, prstm_deltas_mode deltas, uint32_t threads, int verify,
                           prstm_batch *batch, bench_row *row, engine_run *out) {
  memset(out, 0, sizeof *out);
  out->verify_ok = -1;
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = backend;
  opt.threads = threads;
  opt.lock_coverage = p->lock_coverage;
  opt.semantic = mode;
  opt.retry_limit = 100;
  opt.verify = verify;
  opt.deltas = deltas;
  opt.chunk_rows = p->chunk_rows;
  opt.units = p->units;
  opt.hetero_rounds = id == R_HETERO_ROUNDS;
  opt.hetero_policy = p->hetero_policy;
  opt.hetero_period = p->hetero_period;
  opt.watchdog_s = (uint32_t)(c->o.timeout_point_s > 1 ? c->o.timeout_point_s : 1);
  prstm_engine *e = NULL;
  prstm_batch *current = batch;
  int rc = prstm_engine_create(&e, p->wl, &opt);
  if (!rc) rc = prstm_engine_init_state(e, &p->state);
  /* As prstm-run and any embedding that cares for its first run's time
   * do: the GPU's context, kernels and pinned chunks are the engine's
   * set-up, not a run's, so the run's wall (e2e) measures the run. */
  if (!rc) rc = prstm_engine_warm_up(e);
  if (rc) {
    row->status = ROW_FAILED;
    row_note(row, "engine set-up: %s", e ? prstm_engine_error(e) : prstm_strerror(rc));
    prstm_engine_destroy(e);
    return rc;
  }
  uint64_t nwords = 0;
  prstm_engine_state(e, &nwords);
  int result = PRSTM_EINVAL;
  /* Every round through the library's one driver, each checked before the
   * next; the times are the rounds' own (prstm_results: the kernel's, and
   * the wall of each prstm_engine_run), not the host's building of the next
   * round. */
  round_check check = {c, p, e, nwords, verify, row, out};
  rc = prstm_engine_run_rounds(e, &current, check_round, &check, &out->sum, &out->rounds);
  out->kernel_s = out->sum.execute_s;
  out->e2e_s = out->sum.wall_s;
  if (rc < 0) {
    if (row->status != ROW_FAILED) {
      row->status = ROW_FAILED;
      row_note(row, "%s: %s", prstm_err_name(rc), prstm_engine_error(e));
    }
    result = rc;
    goto done;
  }
  /* rc > 0: a failed certificate ended the rounds; out->verify_ok reports
   * it, and the invariant is judged on the state it ended on. */
  int ok = 0;
  char msg[512] = "";
  rc = p->wl->check_invariant(e, current, &ok, msg, sizeof msg);
  if (rc) {
    row->status = ROW_FAILED;
    row_note(row, "invariant check could not run: %s", prstm_strerror(rc));
    goto done;
  }
  row->invariant = ok ? "ok" : "violated";
  row->outcomes = "ok";
  if (!ok && mode == PRSTM_SEMANTIC_RETRY && out->sum.abandoned > 0) {
    row->status = ROW_INCOMPLETE;
    row->invariant = "incomplete";
    row_note(row, "retry mode abandoned %llu transactions at its retry limit; the workload's invariant: %s",
             (unsigned long long)out->sum.abandoned, msg);
    result = 0;
    goto done;
  }
  if (!ok) {
    row->status = ROW_FAILED;
    row_note(row, "invariant violated: %s", msg);
    goto done;
  }
  result = 0;
done:
  if (current != batch) prstm_batch_destroy(current);
  prstm_engine_destroy(e);
  return result;
}

/* A runner of the engine: --repeat timed runs, each checked, the median
 * counted; then, where the point asks for it, one more run with the commit
 * order recorded and replayed serially (never timed: recording it costs). */
static void run_engine_runner(bench_ctx *c, const bench_point *p, runner_id id, prstm_batch *batch, double point_start,
                              bench_row *row) {
  const int gpu = id == R_GPU_POSTPONE || id == R_GPU_RETRY || id == R_GPU_STM || id == R_GPU_DELTAS;
  const int hetero = id == R_HETERO || id == R_HETERO_ROUNDS;
  const prstm_backend backend = hetero          ? PRSTM_BACKEND_HETERO
                                : id == R_MULTI ? PRSTM_BACKEND_MULTI
                                : gpu           ? PRSTM_BACKEND_GPU
                                                : PRSTM_BACKEND_CPU;
  const prstm_semantic_mode mode =
      id == R_GPU_RETRY || id == R_CPU_RETRY ? PRSTM_SEMANTIC_RETRY : PRSTM_SEMANTIC_POSTPONE;
  /* The engine's runners and co-execution take the default (auto); the
   * papers' comparators, the serial replay and backend multi stay the STM
   * they are, like the _stm pair. */
  const prstm_deltas_mode deltas = id == R_GPU_DELTAS || id == R_CPU_DELTAS                 ? PRSTM_DELTAS_ON
                                   : id == R_GPU_POSTPONE || id == R_CPU_POSTPONE || hetero ? PRSTM_DELTAS_AUTO
                                                                                            : PRSTM_DELTAS_OFF;
  uint32_t threads = gpu ? p->gpu_threads : id == R_CPU_SERIAL ? 1 : hetero || id == R_MULTI ? 0 : p->cpu_threads;
  row->backend = hetero ? "hetero" : id == R_MULTI ? "multi" : gpu ? "gpu" : "cpu";
  /* resident: a chunked run's wall less its stream's taking the state to
   * the GPU and giving it back (prstm_results.setup_s). */
  double *kernel = calloc(c->o.repeat, sizeof *kernel), *e2e = calloc(c->o.repeat, sizeof *e2e),
         *resident = calloc(c->o.repeat, sizeof *resident);
  if (!kernel || !e2e || !resident) {
    row->status = ROW_FAILED;
    row_note(row, "out of memory");
    free(kernel);
    free(e2e);
    free(resident);
    return;
  }
  engine_run run;
  unsigned done = 0;
  int incomplete = 0;
  for (unsigned rep = 0; rep < c->o.repeat; rep++) {
    if (bench_now() - point_start > c->o.timeout_point_s) {
      if (done == 0) row->status = ROW_TIMEOUT;
      row_note(row, "--timeout-per-point %.0f s reached after %u of %u repeats", c->o.timeout_point_s, done,
               c->o.repeat);
      break;
    }
    if (engine_run_once(c, p, id, backend, mode, deltas, threads, 0, batch, row, &run)) break;
    if (row->status == ROW_INCOMPLETE) {
      incomplete = 1;
      break;
    }
    kernel[done] = run.kernel_s;
    e2e[done] = run.e2e_s;
    resident[done] = run.sum.setup_s > 0 ? run.e2e_s - run.sum.setup_s : 0;
    done++;
  }
  if (incomplete) {
    /* Counts of the run that gave up, then the certificate: a verified
     * re-run whose committed transactions replay serially to its state. */
    row_take_counts(row, &run);
    row->repeats = 1;
    free(kernel);
    free(e2e);
    free(resident);
    bench_row vrow = *row;
    int rc = engine_run_once(c, p, id, backend, mode, deltas, threads, 1, batch, &vrow, &run);
    if (rc != 0 || run.verify_ok != 1) {
      row->status = ROW_FAILED;
      snprintf(row->verify, sizeof row->verify, "failed");
      row_note(row, "verified re-run: %s", run.verify_ok == 0 ? run.verify_msg : vrow.note);
      return;
    }
    snprintf(row->verify, sizeof row->verify, "ok");
    row_note(row, "verified re-run: %s", run.verify_msg);
    return;
  }
  if (done > 0 && row->status != ROW_FAILED) {
    row->status = ROW_OK;
    row->repeats = done;
    row->kernel_s = median(kernel, done);
    row->e2e_s = median(e2e, done);
    row_take_counts(row, &run);
    row->gpu_bytes = run.sum.gpu_bytes;
    /* A chunked run's rate with the state resident, as a stream of such
     * batches pays each one once the state is on the GPU (and as peers
     * that keep their tables there time their batches). */
    const double resident_s = median(resident, done);
    if (resident_s > 0)
      row_note(row, "chunked: with the state resident (the e2e less its stream's set-up) %.4g s: %.4g M committed tx/s",
               resident_s, (double)row->committed / resident_s / 1e6);
    /* What co-execution did, from the last timed run: the rounds, and the
     * rows each unit kept or gave up. */
    if (hetero)
      row_note(row,
               "co-execution: %llu rounds; %llu rows kept on the second unit; %llu given up (%llu the first unit's); "
               "the first unit stopped in %llu",
               (unsigned long long)run.sum.rounds, (unsigned long long)run.sum.second_unit_rows,
               (unsigned long long)run.sum.discarded_rows, (unsigned long long)run.sum.first_unit_discarded_rows,
               (unsigned long long)run.sum.stopped_rounds);
    if (gpu && !c->gpu_device[0]) snprintf(c->gpu_device, sizeof c->gpu_device, "%s", run.sum.device);
  }
  free(kernel);
  free(e2e);
  free(resident);
  if (row->status != ROW_OK || !p->verify) return;
  if (bench_now() - point_start > c->o.timeout_point_s) {
    row->status = ROW_TIMEOUT;
    row_note(row, "--timeout-per-point reached before the verified run");
    return;
  }
  bench_row vrow = *row;
  if (engine_run_once(c, p, id, backend, mode, deltas, threads, 1, batch, &vrow, &run)) {
    row->status = ROW_FAILED;
    snprintf(row->verify, sizeof row->verify, "failed");
    row_note(row, "verified run: %s", vrow.note);
    return;
  }
  snprintf(row->verify, sizeof row->verify, "%s", run.verify_ok ? "ok" : "failed");
  row_note(row, "verify: %s", run.verify_msg);
  if (!run.verify_ok) row->status = ROW_FAILED;
}

/* The initial words of a point, from the workload's own initialiser. */
static prstm_word *initial_words(const bench_point *p, uint64_t *nwords, char *err, size_t errlen) {
  prstm_engine *e = NULL;
  int rc = prstm_engine_create(&e, p->wl, NULL);
  if (!rc) rc = prstm_engine_init_state(e, &p->state);
  if (rc) {
    snprintf(err, errlen, "%s", e ? prstm_engine_error(e) : prstm_strerror(rc));
    prstm_engine_destroy(e);
    return NULL;
  }
  const prstm_word *w = prstm_engine_state(e, nwords);
  prstm_word *copy = malloc((size_t)*nwords * sizeof *copy);
  if (copy)
    memcpy(copy, w, (size_t)*nwords * sizeof *copy);
  else
    snprintf(err, errlen, "cannot copy %llu state words", (unsigned long long)*nwords);
  prstm_engine_destroy(e);
  return copy;
}

static uint64_t words_sum(const prstm_word *w, uint64_t n) {
  uint64_t s = 0;
  for (uint64_t i = 0; i < n; i++) s += w[i];
  return s;
}

/* The ceiling kernel and the plain serial loop share one copy of the batch
 * and one reference result: the plain loop is the reference, timed; the
 * ceiling must end with exactly its words. Both must preserve the money
 * (initial total + deposits - withdrawals, wrapping like the words do).
 * Either row may be NULL: the reference is computed all the same. */
static void run_bank_baselines(bench_ctx *c, const bench_point *p, prstm_batch *batch, double point_start,
                               bench_row *ceiling_row, bench_row *plain_row) {
  char err[1024] = "";
  prstm_bench_table table;
  uint64_t nwords = 0;
  prstm_word *initial = NULL, *reference = NULL, *final_words = NULL;
  double *times = NULL;
  const int want_ceiling = ceiling_row != NULL, want_plain = plain_row != NULL;
  memset(&table, 0, sizeof table);
  int rc = prstm_bench_table_from_batch(batch, &table, err, sizeof err);
  if (!rc) {
    initial = initial_words(p, &nwords, err, sizeof err);
    if (!initial) rc = PRSTM_ENOMEM;
  }
  reference = rc ? NULL : malloc((size_t)nwords * sizeof *reference);
  times = calloc(c->o.repeat, sizeof *times);
  if (!rc && (!reference || !times)) {
    snprintf(err, sizeof err, "cannot allocate the reference state");
    rc = PRSTM_ENOMEM;
  }
  if (rc) {
    if (want_ceiling) ceiling_row->status = ROW_FAILED, row_note(ceiling_row, "%s", err);
    if (want_plain) plain_row->status = ROW_FAILED, row_note(plain_row, "%s", err);
    goto out;
  }
  const uint64_t expected_total = words_sum(initial, nwords) + table.deposits - table.withdrawals;
  /* The plain loop, timed: one copy of the initial words per repeat. */
  unsigned done = 0;
  for (unsigned rep = 0; rep < (want_plain ? c->o.repeat : 1); rep++) {
    memcpy(reference, initial, (size_t)nwords * sizeof *reference);
    double t0 = bench_now();
    prstm_bench_ceiling_reference(&table, reference, nwords);
    times[done++] = bench_now() - t0;
  }
  const int reference_ok = words_sum(reference, nwords) == expected_total;
  if (want_plain) {
    plain_row->backend = "cpu";
    snprintf(plain_row->device, sizeof plain_row->device, "CPU; 1 thread");
    plain_row->threads = 1;
    plain_row->transactions = plain_row->committed = table.n;
    plain_row->rounds = 1;
    plain_row->repeats = done;
    plain_row->kernel_s = plain_row->e2e_s = median(times, done);
    plain_row->invariant = reference_ok ? "ok" : "violated";
    plain_row->outcomes = "ok";
    plain_row->status = reference_ok ? ROW_OK : ROW_FAILED;
    row_note(plain_row, "every row applied unconditionally; no STM and no funds check");
    if (!reference_ok) row_note(plain_row, "total money not preserved");
  }
  if (!want_ceiling) goto out;
  ceiling_row->backend = "gpu";
  if (!reference_ok) {
    ceiling_row->status = ROW_FAILED;
    row_note(ceiling_row, "no trustworthy reference: the serial reference did not preserve the money");
    goto out;
  }
  final_words = malloc((size_t)nwords * sizeof *final_words);
  if (!final_words) {
    ceiling_row->status = ROW_FAILED;
    row_note(ceiling_row, "cannot allocate the ceiling's final state");
    goto out;
  }
  double *e2e = calloc(c->o.repeat, sizeof *e2e);
  if (!e2e) {
    ceiling_row->status = ROW_FAILED;
    row_note(ceiling_row, "out of memory");
    goto out;
  }
  done = 0;
  prstm_bench_ceiling_result res;
  memset(&res, 0, sizeof res);
  for (unsigned rep = 0; rep < c->o.repeat; rep++) {
    if (bench_now() - point_start > c->o.timeout_point_s) {
      if (done == 0) ceiling_row->status = ROW_TIMEOUT;
      row_note(ceiling_row, "--timeout-per-point reached after %u of %u repeats", done, c->o.repeat);
      break;
    }
    memset(final_words, 0, (size_t)nwords * sizeof *final_words);
    rc = prstm_bench_ceiling_gpu(&table, initial, nwords, p->lock_coverage, p->gpu_threads, c->o.ceiling_direct,
                                 final_words, &res, err, sizeof err);
    if (rc) {
      ceiling_row->status = ROW_FAILED;
      row_note(ceiling_row, "%s: %s", prstm_err_name(rc), err);
      break;
    }
    /* Checked before its time counts: every finish flag set, the money
     * preserved, and every word equal to the serial reference's. */
    uint64_t first_diff = UINT64_MAX;
    for (uint64_t w = 0; w < nwords && first_diff == UINT64_MAX; w++)
      if (final_words[w] != reference[w]) first_diff = w;
    int total_ok = words_sum(final_words, nwords) == expected_total;
    ceiling_row->invariant = total_ok && first_diff == UINT64_MAX ? "ok" : "violated";
    ceiling_row->outcomes = res.finished == table.n ? "ok" : "bad";
    if (!total_ok || first_diff != UINT64_MAX || res.finished != table.n) {
      ceiling_row->status = ROW_FAILED;
      row_note(ceiling_row, "check failed: %llu of %llu finish flags; total %s; first word unlike the reference: %lld",
               (unsigned long long)res.finished, (unsigned long long)table.n, total_ok ? "preserved" : "NOT preserved",
               first_diff == UINT64_MAX ? -1LL : (long long)first_diff);
      break;
    }
    times[done] = res.kernel_s;
    e2e[done] = res.e2e_s;
    done++;
  }
  if (done > 0 && ceiling_row->status != ROW_FAILED) {
    ceiling_row->status = ROW_OK;
    ceiling_row->repeats = done;
    ceiling_row->kernel_s = median(times, done);
    ceiling_row->e2e_s = median(e2e, done);
    ceiling_row->threads = res.threads;
    ceiling_row->transactions = ceiling_row->committed = table.n;
    ceiling_row->rounds = 1;
    ceiling_row->gpu_bytes = res.gpu_bytes;
    snprintf(ceiling_row->device, sizeof ceiling_row->device, "%s", res.device);
    row_note(ceiling_row, "final words equal the serial reference's; money preserved; lock traffic: %s",
             c->o.ceiling_direct ? "direct (one CAS an account)" : "prelock (two CASes an account)");
  }
  free(e2e);
out:
  prstm_bench_table_free(&table);
  free(initial);
  free(reference);
  free(final_words);
  free(times);
}

/* ---- Running a point ---- */

static int gpu_runner_allowed(const bench_ctx *c, bench_row *row) {
  if (c->o.backend == PRSTM_BACKEND_CPU) {
    row->status = ROW_UNAVAILABLE;
    row_note(row, "--backend cpu");
    return 0;
  }
  if (!c->gpu_ok) {
    row->status = ROW_UNAVAILABLE;
    row_note(row, "no usable GPU: %s", c->gpu_why);
    return 0;
  }
  return 1;
}

static void print_point(const bench_point *p, const bench_row *rows) {
  fprintf(stderr, "prstm-bench: %s %s %s %s=%g:", p->experiment, p->wl->name, p->series, p->x_name, p->x);
  for (unsigned id = 0; id < R_COUNT; id++) {
    const bench_row *r = &rows[id];
    if (r->status == ROW_NOT_RUN) continue;
    if (r->status == ROW_OK)
      fprintf(stderr, " %s %.3g M/s", runner_names[id], row_tx_s(r) / 1e6);
    else if (r->status != ROW_UNAVAILABLE)
      fprintf(stderr, " %s %s", runner_names[id], row_status_names[r->status]);
  }
  fputc('\n', stderr);
  for (unsigned id = 0; id < R_COUNT; id++) {
    const bench_row *r = &rows[id];
    if (r->status == ROW_FAILED || r->status == ROW_TIMEOUT || r->status == ROW_INCOMPLETE)
      fprintf(stderr, "prstm-bench:   %s %s: %s\n", runner_names[id], row_status_names[r->status], r->note);
  }
}

/* Builds the point's batch once and runs every runner of the point on it.
 * rows receives R_COUNT results, which are also written to csv; a failure is
 * a row's status, counted in c->failures. */
void run_point(bench_ctx *c, const bench_point *p, FILE *csv, bench_row *rows) {
  memset(rows, 0, sizeof *rows * R_COUNT);
  for (unsigned id = 0; id < R_COUNT; id++) rows[id].table_bytes_per_tx = -1;
  /* A series left out by --series: nothing to run or write. The targets'
   * table needs each of its points, so it never leaves one out. */
  if (c->o.series && strcmp(p->experiment, "targets") != 0) {
    unsigned k = 0;
    while (k < SERIES_COUNT && strcmp(series_names[k], p->series) != 0) k++;
    if (k == SERIES_COUNT || !((c->o.series >> k) & 1u)) return;
  }
  unsigned mask = p->runners & c->o.runners;
  if (p->wl != &prstm_workload_bank) mask &= ~RUNNERS_BANK_ONLY;
  if (c->o.max_time_s > 0 && bench_now() - c->start > c->o.max_time_s) {
    for (unsigned id = 0; id < R_COUNT; id++)
      if (mask & RUNNER_BIT(id)) {
        rows[id].status = ROW_SKIPPED;
        row_note(&rows[id], "--max-time %.0f s spent before this point", c->o.max_time_s);
      }
    write_rows(csv, p, rows);
    c->skipped++;
    return;
  }
  double start = bench_now();
  prstm_batch *batch = NULL;
  char err[1024] = "";
  int rc = prstm_batch_create(&batch, p->wl);
  if (!rc) rc = p->wl->generate(&p->gen, &p->state, batch, err, sizeof err);
  if (rc) {
    for (unsigned id = 0; id < R_COUNT; id++)
      if (mask & RUNNER_BIT(id)) {
        rows[id].status = ROW_FAILED;
        row_note(&rows[id], "batch generation: %s", err[0] ? err : prstm_strerror(rc));
      }
    prstm_batch_destroy(batch);
    write_rows(csv, p, rows);
    print_point(p, rows);
    c->failures++;
    return;
  }
  for (unsigned id = 0; id < R_COUNT; id++) {
    if (!(mask & RUNNER_BIT(id))) continue;
    bench_row *row = &rows[id];
    if ((RUNNER_BIT(id) & RUNNERS_GPU) && !gpu_runner_allowed(c, row)) continue;
    if ((id == R_HETERO || id == R_HETERO_ROUNDS || id == R_MULTI) && c->o.backend == PRSTM_BACKEND_CPU && c->gpu_ok) {
      /* Co-execution and several units take usable GPUs; without one they
       * run on sets of CPU threads, which --backend cpu allows. */
      row->status = ROW_UNAVAILABLE;
      row_note(row, "--backend cpu");
      continue;
    }
    if (id == R_GPU_CEILING || id == R_CPU_PLAIN) continue; /* below, together */
    if (bench_now() - start > c->o.timeout_point_s) {
      row->status = ROW_TIMEOUT;
      row_note(row, "--timeout-per-point %.0f s spent before this runner", c->o.timeout_point_s);
      continue;
    }
    run_engine_runner(c, p, (runner_id)id, batch, start, row);
  }
  /* The ceiling and the plain loop share the batch's flat copy, so they run
   * together; a NULL row is one not wanted here (not asked for, or
   * unavailable). */
  bench_row *ceiling =
      (mask & RUNNER_BIT(R_GPU_CEILING)) && rows[R_GPU_CEILING].status == ROW_NOT_RUN ? &rows[R_GPU_CEILING] : NULL;
  bench_row *plain = (mask & RUNNER_BIT(R_CPU_PLAIN)) ? &rows[R_CPU_PLAIN] : NULL;
  if (ceiling || plain) {
    if (bench_now() - start > c->o.timeout_point_s) {
      if (ceiling) ceiling->status = ROW_TIMEOUT, row_note(ceiling, "--timeout-per-point spent before this runner");
      if (plain) plain->status = ROW_TIMEOUT, row_note(plain, "--timeout-per-point spent before this runner");
    } else {
      run_bank_baselines(c, p, batch, start, ceiling, plain);
    }
  }
  prstm_batch_destroy(batch);
  for (unsigned id = 0; id < R_COUNT; id++)
    if (rows[id].status == ROW_FAILED || rows[id].status == ROW_TIMEOUT) c->failures++;
  write_rows(csv, p, rows);
  print_point(p, rows);
}
