/* results.c: prstm-run's summary on stdout, its results file (JSON) and its final-state file. */
#define _GNU_SOURCE /* realpath */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

#define SAMPLE_LIMIT 100

/* The config's name of a co-execution policy. */
static const char *hetero_policy_name(prstm_hetero_policy p) {
  return p == PRSTM_HETERO_FAVOUR_FASTEST ? "favour-fastest"
         : p == PRSTM_HETERO_BALANCED     ? "balanced"
                                          : "gpu-invalidation";
}

/* Lists up to SAMPLE_LIMIT transactions of one status with their reasons.
 * The run's count of that status (all rounds together, so at least the
 * batch's) ends the scan once that many are listed: a batch of 10^7 rows
 * that all committed is not read again to find none. */
static cJSON *outcome_samples(const prstm_engine *e, const prstm_batch *b, prstm_status want, uint64_t run_count) {
  cJSON *arr = cJSON_CreateArray();
  const prstm_workload *wl = prstm_engine_workload(e);
  const uint64_t n = prstm_batch_size(b), limit = run_count < SAMPLE_LIMIT ? run_count : SAMPLE_LIMIT;
  uint64_t listed = 0;
  for (uint64_t i = 0; i < n && listed < limit; i++) {
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

char *cli_results_json(const prstm_config *cfg, const prstm_engine *e, const prstm_batch *b, const prstm_results *r,
                       const run_report *rep) {
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
  cJSON_AddNumberToObject(t, "run", r->wall_s);
  cJSON_AddNumberToObject(t, "setup", r->setup_s);
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
  cJSON_AddStringToObject(root, "backend", cli_backend_name(r->backend));
  cJSON_AddStringToObject(root, "device", r->device);
  if (r->fallback[0]) cJSON_AddStringToObject(root, "fallback", r->fallback);
  cJSON_AddNumberToObject(root, "gpu_bytes", (double)r->gpu_bytes);
  cJSON *eng = cJSON_AddObjectToObject(root, "engine");
  cJSON_AddStringToObject(eng, "backend_requested", cli_backend_name(cfg->options.backend));
  cJSON_AddNumberToObject(eng, "threads", r->threads);
  cJSON_AddNumberToObject(eng, "lock_coverage", r->lock_coverage);
  cJSON_AddStringToObject(eng, "semantic", cfg->options.semantic == PRSTM_SEMANTIC_RETRY ? "retry" : "postpone");
  cJSON_AddNumberToObject(eng, "retry_limit", cfg->options.retry_limit);
  cJSON_AddStringToObject(eng, "deltas", cli_deltas_name(cfg->options.deltas));
  cJSON_AddStringToObject(root, "path", r->path == PRSTM_PATH_DELTAS ? "deltas" : "stm");
  cJSON_AddNumberToObject(root, "hot_estimate", r->hot_estimate);
  if (r->backend == PRSTM_BACKEND_HETERO) {
    cJSON *co = cJSON_AddObjectToObject(root, "co_execution");
    if (co) {
      cJSON_AddNumberToObject(co, "rounds", (double)r->rounds);
      cJSON_AddNumberToObject(co, "second_unit_rows", (double)r->second_unit_rows);
      cJSON_AddStringToObject(co, "policy", hetero_policy_name(cfg->options.hetero_policy));
      /* 0: the period adapted to the conflicts. */
      cJSON_AddNumberToObject(co, "period_rows", (double)cfg->options.hetero_period);
      cJSON_AddNumberToObject(co, "discarded_rows", (double)r->discarded_rows);
      cJSON_AddNumberToObject(co, "first_unit_discarded_rows", (double)r->first_unit_discarded_rows);
      cJSON_AddNumberToObject(co, "reordered_rounds", (double)r->reordered_rounds);
      cJSON_AddNumberToObject(co, "stopped_rounds", (double)r->stopped_rounds);
      if (r->alone != PRSTM_BACKEND_AUTO) {
        cJSON_AddStringToObject(co, "alone", r->alone == PRSTM_BACKEND_GPU ? "gpu" : "cpu");
        cJSON_AddStringToObject(co, "alone_why", r->alone_why);
      }
    }
  }
  if (r->backend == PRSTM_BACKEND_MULTI) {
    cJSON *mu = cJSON_AddObjectToObject(root, "multi");
    if (mu) {
      cJSON_AddNumberToObject(mu, "units", r->units);
      cJSON_AddNumberToObject(mu, "rounds", (double)r->rounds);
      cJSON_AddNumberToObject(mu, "cross_rows", (double)r->cross_rows);
      cJSON_AddBoolToObject(mu, "partitioned", r->state_partitioned != 0);
      cJSON_AddNumberToObject(mu, "away_rows", (double)r->away_rows);
    }
  }
  cJSON *snap = cJSON_AddObjectToObject(root, "snapshot");
  if (snap) {
    cJSON_AddNumberToObject(snap, "rows", (double)r->snapshot_rows);
    cJSON_AddNumberToObject(snap, "seconds", r->snapshot_s);
  }
  cJSON_AddItemToObject(root, "abandoned_sample", outcome_samples(e, b, PRSTM_ABANDONED, r->abandoned));
  cJSON_AddItemToObject(root, "failed_sample", outcome_samples(e, b, PRSTM_FAILED, r->failed));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

/* {"workload": ..., "words": N, "state": [w0, w1, ...]}, built by hand because
 * millions of numbers as cJSON nodes would cost far more memory. */
char *cli_final_state_json(const prstm_config *cfg, const prstm_engine *e, size_t *len) {
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

/* The summary's line for a file written: the path as given and, when it
 * was relative, where that is, since output paths are relative to the
 * working directory and a config's own paths to its folder. */
void cli_print_written(const char *what, const char *path) {
  char where[PATH_MAX];
  if (path[0] != '/' && realpath(path, where))
    printf("  %-18s %s (%s)\n", what, path, where);
  else
    printf("  %-18s %s\n", what, path);
}

void cli_print_summary(const prstm_config *cfg, const prstm_results *r, const run_report *rep) {
  double thr = r->execute_s > 0 ? (double)r->committed / r->execute_s : 0;
  printf("prstm-run %s: %s (workload %s)\n", PRSTM_VERSION_STRING, cfg->path, cfg->workload->name);
  printf("  transactions       %llu\n", (unsigned long long)r->transactions);
  if (rep->rounds > 1) printf("  rounds             %u\n", rep->rounds);
  printf("  committed          %llu\n", (unsigned long long)r->committed);
  printf("  abandoned          %llu\n", (unsigned long long)r->abandoned);
  printf("  failed             %llu\n", (unsigned long long)r->failed);
  printf("  concurrent aborts  %llu\n", (unsigned long long)r->aborts);
  /* Within a sweep higher tags run first (the bank's deposit before its
   * withdrawal), so a semantic pair often resolves with no postponement. */
  printf("  postponements      %llu (semantic conflicts met; higher tags run first in a sweep)\n",
         (unsigned long long)r->postponements);
  printf("  time               load %.3f s, transfer %.3f s, execute %.3f s, total %.3f s\n", rep->load_s,
         r->transfer_s, r->execute_s, rep->total_s);
  printf("  throughput         %.3f M committed tx/s of execution\n", thr / 1e6);
  /* A chunked run's stream takes the state to the GPU and back once; the
   * chunks between, state resident, are what a stream of such batches
   * costs each one. */
  if (r->setup_s > 0 && r->wall_s > r->setup_s)
    printf(
        "  chunked run        %.3f ms, of which %.3f ms took the state and gave it back: %.3f M committed tx/s "
        "over the run, %.3f M with the state resident\n",
        r->wall_s * 1e3, r->setup_s * 1e3, (double)r->committed / r->wall_s / 1e6,
        (double)r->committed / (r->wall_s - r->setup_s) / 1e6);
  if (r->snapshot_rows)
    printf("  snapshot queries   %llu, on the starting state, in %.3f s on the host before the run\n",
           (unsigned long long)r->snapshot_rows, r->snapshot_s);
  printf("  invariant          %s: %s\n", rep->invariant_ok ? "ok" : "VIOLATED", rep->invariant);
  if (rep->verified)
    printf("  verify             %s: %s (replay %.3f s)\n", rep->verify.ok ? "ok" : "FAILED", rep->verify.message,
           rep->verify.replay_s);
  printf("  backend            %s: %s, lock_coverage %u, semantic %s\n", cli_backend_name(r->backend), r->device,
         r->lock_coverage, cfg->options.semantic == PRSTM_SEMANTIC_RETRY ? "retry" : "postpone");
  if (r->path == PRSTM_PATH_DELTAS)
    printf("  path               deltas: the batch order commits every row (hot-word estimate %.3g)\n",
           r->hot_estimate);
  else if (cfg->options.deltas != PRSTM_DELTAS_OFF && r->hot_estimate > 0)
    printf("  path               stm (hot-word estimate %.3g)\n", r->hot_estimate);
  else
    printf("  path               stm\n");
  if (r->backend == PRSTM_BACKEND_HETERO && r->path == PRSTM_PATH_DELTAS)
    printf("  co-execution       none needed: the batch ran as sums on one unit's delta path\n");
  else if (r->backend == PRSTM_BACKEND_HETERO && r->alone != PRSTM_BACKEND_AUTO)
    printf("  co-execution       none: the %s ran the batch alone (%s)\n",
           r->alone == PRSTM_BACKEND_GPU ? "GPU" : "CPU", r->alone_why);
  else if (r->backend == PRSTM_BACKEND_HETERO)
    printf(
        "  co-execution       %llu rounds; the second unit decided %llu kept rows; %llu rows given up to conflicts "
        "and run again (%llu of them the first unit's, policy %s); %llu rounds kept with the second unit's part "
        "first; the first unit stopped in %llu rounds when the second had ended\n",
        (unsigned long long)r->rounds, (unsigned long long)r->second_unit_rows, (unsigned long long)r->discarded_rows,
        (unsigned long long)r->first_unit_discarded_rows, hetero_policy_name(cfg->options.hetero_policy),
        (unsigned long long)r->reordered_rounds, (unsigned long long)r->stopped_rounds);
  if (r->backend == PRSTM_BACKEND_MULTI && r->state_partitioned)
    printf(
        "  units              %u, state partitioned, %llu rounds; %llu rows ran on the host (their words span "
        "units' ranges, or the host cannot route them; %llu were sent back by their unit)\n",
        r->units, (unsigned long long)r->rounds, (unsigned long long)r->cross_rows, (unsigned long long)r->away_rows);
  else if (r->backend == PRSTM_BACKEND_MULTI)
    printf(
        "  units              %u, %llu rounds; %llu rows ran on the first unit (their words span units' ranges, "
        "or the host cannot route them)\n",
        r->units, (unsigned long long)r->rounds, (unsigned long long)r->cross_rows);
  if (r->backend == PRSTM_BACKEND_GPU)
    printf("  gpu memory         %.1f MiB (%.1f bytes per transaction in the table)\n", r->gpu_bytes / 1048576.0,
           r->transactions ? (double)r->gpu_bytes / (double)r->transactions : 0.0);
}
