/* fuzz_config.c: libFuzzer harness for prstm_config_load and prstm_config_load_batch (inline and generated batches). */
#include <cjson/cJSON.h>

#include "fuzz_common.h"

/* Fuzz the parser, not the generator's size: bigger generated batches than
 * this, or bigger states, are parsed but not generated. */
#define FUZZ_MAX_GENERATED 10000u
#define FUZZ_MAX_ACCOUNTS 1000000u
/* The generator spends up to 16 * k * k steps per transaction picking k
 * distinct accounts when the state has fewer than k (accounts_per_tx = k),
 * so transactions * k * k is capped too: 10000 transactions of 128 accounts
 * take about 9 s under the sanitizers, near the 10 s timeout. */
#define FUZZ_MAX_GENERATE_COST (1u << 22)
/* The state the inline transactions are checked against, as prstm-run does
 * with the state's own word count, but kept small. */
#define FUZZ_MAX_NWORDS 64u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write_input("prstm-fuzz-config", data, size);
  prstm_config cfg;
  char err[2048];
  int rc = prstm_config_load(path, &cfg, err, sizeof err);
  if (rc != 0) {
    fuzz_check_error(rc, err, path);
    FUZZ_CHECK(prstm_is_input_error(rc) || rc == PRSTM_ENOMEM, "config error %s: %s", prstm_err_name(rc), err);
    FUZZ_CHECK(cfg.inline_json == NULL, "failed load left inline_json set: %s", err);
    /* A config that failed halfway must stay safe to free (again). */
    prstm_config_free(&cfg);
    return 0;
  }

  /* What a successful load promises. */
  FUZZ_CHECK(cfg.workload != NULL, "no workload");
  FUZZ_CHECK(cfg.options.lock_coverage >= 1, "lock_coverage %u", cfg.options.lock_coverage);
  /* state.accounts and batch.generate.transactions are required of the
   * bank-style workloads alone; another workload's state is its own knobs,
   * and it may size a generated batch by them (kmeans: points times
   * iterations), leaving transactions 0. */
  const int bank_keys = (cfg.workload->config_keys & PRSTM_KEYS_BANK) != 0;
  FUZZ_CHECK(!bank_keys || cfg.state.accounts >= 1, "state.accounts 0");
  FUZZ_CHECK(cfg.batch_kind == PRSTM_BATCH_INLINE || cfg.batch_kind == PRSTM_BATCH_FILE ||
                 cfg.batch_kind == PRSTM_BATCH_GENERATE,
             "batch_kind %d", (int)cfg.batch_kind);
  FUZZ_CHECK((cfg.batch_kind == PRSTM_BATCH_INLINE) == (cfg.inline_json != NULL),
             "inline_json does not match batch_kind %d", (int)cfg.batch_kind);
  if (cfg.batch_kind == PRSTM_BATCH_GENERATE) {
    const prstm_generate_spec *g = &cfg.generate;
    FUZZ_CHECK(!bank_keys || g->transactions >= 1, "generate.transactions 0");
    FUZZ_CHECK(g->amount_min <= g->amount_max, "amount min %llu > max %llu", (unsigned long long)g->amount_min,
               (unsigned long long)g->amount_max);
    FUZZ_CHECK(g->nmix <= PRSTM_MAX_TYPES, "nmix %u", g->nmix);
    FUZZ_CHECK(g->semantic_ratio >= 0.0 && g->semantic_ratio <= 1.0, "semantic_ratio %g", g->semantic_ratio);
    FUZZ_CHECK(g->read_only == -1.0 || (g->read_only >= 0.0 && g->read_only <= 1.0), "read_only %g", g->read_only);
  }

  /* No filesystem traversal (batch.file names any path), and no huge
   * generated batches. The batch is loaded for the bank-style workloads
   * alone: the bounds below (accounts, the generator's cost) and the rows'
   * address checks are theirs, and another workload's state size comes
   * from its own knobs, which this harness does not bound. */
  /* The bank generator refuses more than 128 accounts per transaction
   * before doing any work, so wider k costs nothing (and k * k could wrap). */
  uint64_t k = cfg.generate.accounts_per_tx;
  if (k < 2) k = 2;
  if (k > 128) k = 1;
  int skip = !bank_keys || cfg.batch_kind == PRSTM_BATCH_FILE ||
             (cfg.batch_kind == PRSTM_BATCH_GENERATE &&
              (cfg.generate.transactions > FUZZ_MAX_GENERATED || cfg.state.accounts > FUZZ_MAX_ACCOUNTS ||
               cfg.generate.transactions * k * k > FUZZ_MAX_GENERATE_COST));
  if (!skip) {
    uint64_t nwords = cfg.state.accounts < FUZZ_MAX_NWORDS ? cfg.state.accounts : FUZZ_MAX_NWORDS;
    prstm_batch *b = NULL;
    if (prstm_batch_create(&b, cfg.workload) != 0) abort();
    rc = prstm_config_load_batch(&cfg, nwords, b, err, sizeof err);
    if (rc != 0) {
      fuzz_check_error(rc, err, path);
      FUZZ_CHECK(prstm_is_input_error(rc) || rc == PRSTM_ENOMEM, "batch error %s: %s", prstm_err_name(rc), err);
    } else if (cfg.batch_kind == PRSTM_BATCH_INLINE) {
      const cJSON *arr = (const cJSON *)cfg.inline_json;
      uint64_t count = 0;
      for (const cJSON *e = arr->child; e != NULL; e = e->next) count++;
      FUZZ_CHECK(prstm_batch_size(b) == count && count > 0, "%llu rows from %llu transactions",
                 (unsigned long long)prstm_batch_size(b), (unsigned long long)count);
      fuzz_check_rows(b, cfg.workload, 0, nwords);
    } else {
      FUZZ_CHECK(prstm_batch_size(b) == cfg.generate.transactions, "%llu rows generated, %llu asked for",
                 (unsigned long long)prstm_batch_size(b), (unsigned long long)cfg.generate.transactions);
      /* The generator draws from the whole state, not from nwords. */
      fuzz_check_rows(b, cfg.workload, 0, cfg.state.accounts);
    }
    prstm_batch_destroy(b);
  }
  prstm_config_free(&cfg);
  FUZZ_CHECK(cfg.inline_json == NULL, "prstm_config_free left inline_json set");
  /* Freeing twice is as safe as freeing a failed config. */
  prstm_config_free(&cfg);
  return 0;
}
