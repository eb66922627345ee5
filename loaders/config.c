/* config.c: loads and checks a prstm JSON config, then fills its batch (inline, JSON Lines file or generated). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loaders_internal.h"
#include "ranges.h"

/* Everything a section parser needs to report a problem: the file to name
 * first and the caller's message buffer. */
typedef struct cfg_ctx {
  const char *file;
  char *err;
  size_t errlen;
} cfg_ctx;

/* Rejects unknown and repeated keys of obj, whose key path is prefix ("" at
 * the top level), so that a typo is an error instead of a silent default. */
static int check_keys(const cfg_ctx *c, const cJSON *obj, const char *prefix, const char *const *allowed) {
  const char *bad = NULL;
  int dup = 0;
  if (loaders_json_check_keys(obj, allowed, &bad, &dup) == 0) return 0;
  loaders_errf(c->err, c->errlen, "%s: %s key '%s%s%s'", c->file, dup ? "duplicate" : "unknown", prefix,
               prefix[0] != '\0' ? "." : "", bad);
  return PRSTM_ECONFIG;
}

/* Looks up an optional object member; a present member must be an object. */
static int get_object(const cfg_ctx *c, const cJSON *parent, const char *key, const char *where, int required,
                      const cJSON **out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(parent, key);
  *out = NULL;
  if (item == NULL) {
    if (!required) return 0;
    loaders_errf(c->err, c->errlen, "%s: %s: missing", c->file, where);
    return PRSTM_ECONFIG;
  }
  if (!cJSON_IsObject(item)) {
    loaders_errf(c->err, c->errlen, "%s: %s: expected an object", c->file, where);
    return PRSTM_ECONFIG;
  }
  *out = item;
  return 0;
}

/* Reads an integer member in [min, max]; *out keeps its default when the
 * member is absent and not required. */
static int get_uint(const cfg_ctx *c, const cJSON *parent, const char *key, const char *where, int required,
                    uint64_t min, uint64_t max, uint64_t *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(parent, key);
  if (item == NULL) {
    if (!required) return 0;
    loaders_errf(c->err, c->errlen, "%s: %s: missing", c->file, where);
    return PRSTM_ECONFIG;
  }
  uint64_t v;
  if (loaders_json_uint(item, &v) != 0) {
    loaders_errf(c->err, c->errlen, "%s: %s: expected %s", c->file, where, loaders_uint_expected(item));
    return PRSTM_ECONFIG;
  }
  if (v < min) {
    loaders_errf(c->err, c->errlen, "%s: %s: must be at least %" PRIu64, c->file, where, min);
    return PRSTM_ECONFIG;
  }
  if (v > max) {
    loaders_errf(c->err, c->errlen, "%s: %s: must be at most %" PRIu64, c->file, where, max);
    return PRSTM_ECONFIG;
  }
  *out = v;
  return 0;
}

static int get_u32(const cfg_ctx *c, const cJSON *parent, const char *key, const char *where, uint32_t min,
                   uint32_t *out) {
  uint64_t v = *out;
  int rc = get_uint(c, parent, key, where, 0, min, UINT32_MAX, &v);
  if (rc == 0) *out = (uint32_t)v;
  return rc;
}

/* Reads an optional share in [0, 1]; *out keeps its default when absent. */
static int get_ratio(const cfg_ctx *c, const cJSON *parent, const char *key, const char *where, double *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(parent, key);
  if (item == NULL) return 0;
  /* Written so that NaN also fails the test. */
  if (!cJSON_IsNumber(item) || !(item->valuedouble >= 0.0 && item->valuedouble <= 1.0)) {
    loaders_errf(c->err, c->errlen, "%s: %s: expected a number between 0 and 1", c->file, where);
    return PRSTM_ECONFIG;
  }
  *out = item->valuedouble;
  return 0;
}

static int get_bool(const cfg_ctx *c, const cJSON *parent, const char *key, const char *where, int *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(parent, key);
  if (item == NULL) return 0;
  if (!cJSON_IsBool(item)) {
    loaders_errf(c->err, c->errlen, "%s: %s: expected true or false", c->file, where);
    return PRSTM_ECONFIG;
  }
  *out = cJSON_IsTrue(item) ? 1 : 0;
  return 0;
}

/* Reads an optional string member; *out is left NULL when it is absent. */
static int get_string(const cfg_ctx *c, const cJSON *parent, const char *key, const char *where, int required,
                      const char **out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(parent, key);
  *out = NULL;
  if (item == NULL) {
    if (!required) return 0;
    loaders_errf(c->err, c->errlen, "%s: %s: missing", c->file, where);
    return PRSTM_ECONFIG;
  }
  if (!cJSON_IsString(item) || item->valuestring == NULL) {
    loaders_errf(c->err, c->errlen, "%s: %s: expected a string", c->file, where);
    return PRSTM_ECONFIG;
  }
  *out = item->valuestring;
  return 0;
}

/* Copies dir (its first dirlen bytes, a trailing slash included) followed by
 * path into a fixed config field, refusing to truncate: a cut path would name
 * some other file. */
static int copy_path(const cfg_ctx *c, const char *where, char *dst, size_t dstlen, const char *dir, size_t dirlen,
                     const char *path) {
  size_t plen = strlen(path);
  if (dirlen + plen + 1 > dstlen) {
    loaders_errf(c->err, c->errlen, "%s: %s: path too long (at most %zu bytes)", c->file, where, dstlen - 1);
    return PRSTM_ECONFIG;
  }
  memcpy(dst, dir, dirlen);
  memcpy(dst + dirlen, path, plen + 1);
  return 0;
}

static int parse_engine(const cfg_ctx *c, const cJSON *root, prstm_options *opt) {
  static const char *const keys[] = {
      "backend",       "threads",       "lock_coverage", "semantic",        "retry_limit",
      "verify",        "watchdog_s",    "chunk_rows",    "deltas",          "units",
      "hetero_rounds", "hetero_policy", "hetero_period", "partition_state", NULL};
  const cJSON *eng;
  int rc = get_object(c, root, "engine", "engine", 0, &eng);
  if (rc != 0 || eng == NULL) return rc;
  if ((rc = check_keys(c, eng, "engine", keys)) != 0) return rc;

  const char *s;
  if ((rc = get_string(c, eng, "backend", "engine.backend", 0, &s)) != 0) return rc;
  if (s != NULL) {
    if (strcmp(s, "auto") == 0)
      opt->backend = PRSTM_BACKEND_AUTO;
    else if (strcmp(s, "gpu") == 0)
      opt->backend = PRSTM_BACKEND_GPU;
    else if (strcmp(s, "cpu") == 0)
      opt->backend = PRSTM_BACKEND_CPU;
    else if (strcmp(s, "hetero") == 0)
      opt->backend = PRSTM_BACKEND_HETERO;
    else if (strcmp(s, "multi") == 0)
      opt->backend = PRSTM_BACKEND_MULTI;
    else {
      loaders_errf(c->err, c->errlen, "%s: engine.backend: expected 'auto', 'gpu', 'cpu', 'hetero' or 'multi'",
                   c->file);
      return PRSTM_ECONFIG;
    }
  }
  /* One limit, the lock word's: a value above it gets one message, however
   * large. */
  uint64_t threads = opt->threads;
  if ((rc = get_uint(c, eng, "threads", "engine.threads", 0, 0, PRSTM_MAX_THREADS, &threads)) != 0) return rc;
  opt->threads = (uint32_t)threads;
  if ((rc = get_u32(c, eng, "lock_coverage", "engine.lock_coverage", 1, &opt->lock_coverage)) != 0) return rc;
  if ((rc = get_string(c, eng, "semantic", "engine.semantic", 0, &s)) != 0) return rc;
  if (s != NULL) {
    if (strcmp(s, "postpone") == 0)
      opt->semantic = PRSTM_SEMANTIC_POSTPONE;
    else if (strcmp(s, "retry") == 0)
      opt->semantic = PRSTM_SEMANTIC_RETRY;
    else {
      loaders_errf(c->err, c->errlen, "%s: engine.semantic: expected 'postpone' or 'retry'", c->file);
      return PRSTM_ECONFIG;
    }
  }
  if ((rc = get_u32(c, eng, "retry_limit", "engine.retry_limit", 0, &opt->retry_limit)) != 0) return rc;
  if ((rc = get_string(c, eng, "deltas", "engine.deltas", 0, &s)) != 0) return rc;
  if (s != NULL) {
    if (strcmp(s, "auto") == 0)
      opt->deltas = PRSTM_DELTAS_AUTO;
    else if (strcmp(s, "on") == 0)
      opt->deltas = PRSTM_DELTAS_ON;
    else if (strcmp(s, "off") == 0)
      opt->deltas = PRSTM_DELTAS_OFF;
    else {
      loaders_errf(c->err, c->errlen, "%s: engine.deltas: expected 'auto', 'on' or 'off'", c->file);
      return PRSTM_ECONFIG;
    }
  }
  if ((rc = get_bool(c, eng, "verify", "engine.verify", &opt->verify)) != 0) return rc;
  if ((rc = get_bool(c, eng, "hetero_rounds", "engine.hetero_rounds", &opt->hetero_rounds)) != 0) return rc;
  if ((rc = get_string(c, eng, "hetero_policy", "engine.hetero_policy", 0, &s)) != 0) return rc;
  if (s != NULL) {
    if (strcmp(s, "gpu-invalidation") == 0)
      opt->hetero_policy = PRSTM_HETERO_GPU_INVALIDATION;
    else if (strcmp(s, "favour-fastest") == 0)
      opt->hetero_policy = PRSTM_HETERO_FAVOUR_FASTEST;
    else if (strcmp(s, "balanced") == 0)
      opt->hetero_policy = PRSTM_HETERO_BALANCED;
    else {
      loaders_errf(c->err, c->errlen,
                   "%s: engine.hetero_policy: expected 'gpu-invalidation', 'favour-fastest' or 'balanced'", c->file);
      return PRSTM_ECONFIG;
    }
  }
  /* 0 keeps the default: the period adapts to the conflicts. */
  if ((rc = get_uint(c, eng, "hetero_period", "engine.hetero_period", 0, 0, UINT64_MAX, &opt->hetero_period)) != 0)
    return rc;
  if ((rc = get_bool(c, eng, "partition_state", "engine.partition_state", &opt->partition_state)) != 0) return rc;
  if ((rc = get_u32(c, eng, "watchdog_s", "engine.watchdog_s", 0, &opt->watchdog_s)) != 0) return rc;
  /* 0 keeps the default: chunks only when the table does not fit the GPU. */
  if ((rc = get_uint(c, eng, "chunk_rows", "engine.chunk_rows", 0, 0, UINT64_MAX, &opt->chunk_rows)) != 0) return rc;
  /* 0: every GPU (two CPU units where none is usable). */
  uint64_t units = opt->units;
  if ((rc = get_uint(c, eng, "units", "engine.units", 0, 0, 64, &units)) != 0) return rc;
  opt->units = (uint32_t)units;
  return 0;
}

/* Builds the allowed keys of a section: its common keys, the bank-style
 * keys when the workload takes them, and the workload's own knobs. */
#define CFG_MAX_KEYS (24 + PRSTM_MAX_PARAMS)
static void section_keys(const prstm_workload *wl, prstm_param_section section, const char *const *common,
                         const char *const *bank, const char **out) {
  unsigned n = 0;
  for (; *common != NULL; common++) out[n++] = *common;
  if (wl->config_keys & PRSTM_KEYS_BANK)
    for (; *bank != NULL; bank++) out[n++] = *bank;
  for (unsigned i = 0; i < wl->nparams && i < PRSTM_MAX_PARAMS; i++)
    if (wl->params[i].section == section) out[n++] = wl->params[i].name;
  out[n] = NULL;
}

/* Reads the workload's knobs of one section into params; absent knobs keep
 * the defaults set before parsing. */
static int parse_params(const cfg_ctx *c, const cJSON *obj, const prstm_workload *wl, prstm_param_section section,
                        const char *prefix, double *params) {
  for (unsigned i = 0; i < wl->nparams && i < PRSTM_MAX_PARAMS; i++) {
    const prstm_param_desc *d = &wl->params[i];
    if (d->section != section) continue;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, d->name);
    if (item == NULL) continue;
    double v = cJSON_IsNumber(item) ? item->valuedouble : 0.0;
    /* Written so that NaN also fails the range test. */
    if (!cJSON_IsNumber(item) || !(v >= d->min && v <= d->max) || (d->integer && v != (double)(int64_t)v)) {
      loaders_errf(c->err, c->errlen, "%s: %s.%s: expected %s between %.17g and %.17g", c->file, prefix, d->name,
                   d->integer ? "a whole number" : "a number", d->min, d->max);
      return PRSTM_ECONFIG;
    }
    params[i] = v;
  }
  return 0;
}

static int parse_state(const cfg_ctx *c, const cJSON *root, const prstm_workload *wl, prstm_state_spec *st) {
  static const char *const common[] = {NULL};
  static const char *const bank[] = {"accounts", "initial_balance", NULL};
  const char *keys[CFG_MAX_KEYS];
  section_keys(wl, PRSTM_PARAM_STATE, common, bank, keys);
  const cJSON *obj;
  int rc = get_object(c, root, "state", "state", 1, &obj);
  if (rc != 0) return rc;
  if ((rc = check_keys(c, obj, "state", keys)) != 0) return rc;
  if ((rc = parse_params(c, obj, wl, PRSTM_PARAM_STATE, "state", st->params)) != 0) return rc;
  if (!(wl->config_keys & PRSTM_KEYS_BANK)) return 0;
  if ((rc = get_uint(c, obj, "accounts", "state.accounts", 1, 1, UINT64_MAX, &st->accounts)) != 0) return rc;
  return get_uint(c, obj, "initial_balance", "state.initial_balance", 0, 0, UINT64_MAX, &st->initial_balance);
}

/* batch.generate.mix: type name -> weight. The names are taken from the
 * workload's own type table so that they outlive the parsed JSON. */
static int parse_mix(const cfg_ctx *c, const cJSON *mix, const prstm_workload *wl, prstm_generate_spec *g) {
  unsigned n = 0;
  double total = 0.0;
  for (const cJSON *e = mix->child; e != NULL; e = e->next) {
    const char *name = e->string != NULL ? e->string : "";
    for (const cJSON *p = mix->child; p != e; p = p->next) {
      if (p->string != NULL && strcmp(p->string, name) == 0) {
        loaders_errf(c->err, c->errlen, "%s: duplicate key 'batch.generate.mix.%s'", c->file, name);
        return PRSTM_ECONFIG;
      }
    }
    int type = prstm_type_find(wl, name);
    if (type < 0 || (unsigned)type >= wl->ntypes) {
      char names[512];
      loaders_type_names(wl, names, sizeof names);
      loaders_errf(c->err, c->errlen, "%s: batch.generate.mix: unknown transaction type '%s' (workload %s has: %s)",
                   c->file, name, wl->name, names);
      return PRSTM_EUNKNOWN;
    }
    /* The upper bound rejects an infinite weight (cJSON reads 1e400 as one)
     * and keeps the sum of up to 64 weights finite. */
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0.0 && e->valuedouble <= 1e300)) {
      loaders_errf(c->err, c->errlen, "%s: batch.generate.mix.%s: expected a non-negative number", c->file, name);
      return PRSTM_ECONFIG;
    }
    if (n >= PRSTM_MAX_TYPES) {
      loaders_errf(c->err, c->errlen, "%s: batch.generate.mix: more than %d types", c->file, PRSTM_MAX_TYPES);
      return PRSTM_ECONFIG;
    }
    g->mix_names[n] = wl->types[type].name;
    g->mix_weights[n] = e->valuedouble;
    total += e->valuedouble;
    n++;
  }
  /* An empty or all-zero mix cannot pick any transaction; the default mix is
   * asked for by leaving the key out, never by an empty object. */
  if (n == 0) {
    loaders_errf(c->err, c->errlen, "%s: batch.generate.mix: expected at least one type", c->file);
    return PRSTM_ECONFIG;
  }
  if (!(total > 0.0)) {
    loaders_errf(c->err, c->errlen, "%s: batch.generate.mix: weights are all zero", c->file);
    return PRSTM_ECONFIG;
  }
  g->nmix = n;
  return 0;
}

static int parse_generate(const cfg_ctx *c, const cJSON *gen, const prstm_workload *wl, prstm_generate_spec *g) {
  static const char *const common[] = {"transactions",   "seed",      "mix",     "read_only",
                                       "semantic_ratio", "presorted", "threads", NULL};
  static const char *const bank[] = {"accounts_per_tx", "amount", NULL};
  static const char *const amount_keys[] = {"min", "max", NULL};
  const char *keys[CFG_MAX_KEYS];
  section_keys(wl, PRSTM_PARAM_GENERATE, common, bank, keys);
  int rc;
  if ((rc = check_keys(c, gen, "batch.generate", keys)) != 0) return rc;
  /* The bank's batches are sized by this key; other workloads may size
   * theirs by their own knobs (kmeans: points times iterations). */
  if ((rc = get_uint(c, gen, "transactions", "batch.generate.transactions", (wl->config_keys & PRSTM_KEYS_BANK) != 0, 1,
                     UINT64_MAX, &g->transactions)) != 0)
    return rc;
  if ((rc = get_uint(c, gen, "seed", "batch.generate.seed", 0, 0, UINT64_MAX, &g->seed)) != 0) return rc;
  if ((rc = parse_params(c, gen, wl, PRSTM_PARAM_GENERATE, "batch.generate", g->params)) != 0) return rc;
  uint64_t apt = g->accounts_per_tx;
  if ((rc = get_uint(c, gen, "accounts_per_tx", "batch.generate.accounts_per_tx", 0, 1, UINT_MAX, &apt)) != 0)
    return rc;
  g->accounts_per_tx = (unsigned)apt;
  uint64_t gen_threads = g->threads;
  if ((rc = get_uint(c, gen, "threads", "batch.generate.threads", 0, 0, 1024, &gen_threads)) != 0) return rc;
  g->threads = (unsigned)gen_threads;

  const cJSON *amount;
  if ((rc = get_object(c, gen, "amount", "batch.generate.amount", 0, &amount)) != 0) return rc;
  if (amount != NULL) {
    if ((rc = check_keys(c, amount, "batch.generate.amount", amount_keys)) != 0) return rc;
    if ((rc = get_uint(c, amount, "min", "batch.generate.amount.min", 0, 0, UINT64_MAX, &g->amount_min)) != 0)
      return rc;
    if ((rc = get_uint(c, amount, "max", "batch.generate.amount.max", 0, 0, UINT64_MAX, &g->amount_max)) != 0)
      return rc;
    if (g->amount_min > g->amount_max) {
      loaders_errf(c->err, c->errlen, "%s: batch.generate.amount: min %" PRIu64 " exceeds max %" PRIu64, c->file,
                   g->amount_min, g->amount_max);
      return PRSTM_ECONFIG;
    }
  }
  if ((rc = get_ratio(c, gen, "read_only", "batch.generate.read_only", &g->read_only)) != 0) return rc;
  if ((rc = get_ratio(c, gen, "semantic_ratio", "batch.generate.semantic_ratio", &g->semantic_ratio)) != 0) return rc;
  if ((rc = get_bool(c, gen, "presorted", "batch.generate.presorted", &g->presorted)) != 0) return rc;

  const cJSON *mix;
  if ((rc = get_object(c, gen, "mix", "batch.generate.mix", 0, &mix)) != 0) return rc;
  if (mix != NULL) return parse_mix(c, mix, wl, g);
  return 0;
}

/* Parses the batch section. The inline array is detached from root so that
 * it survives the deletion of the rest of the document. */
static int parse_batch(const cfg_ctx *c, cJSON *root, prstm_config *cfg) {
  static const char *const keys[] = {"transactions", "file", "generate", NULL};
  const cJSON *batch;
  int rc = get_object(c, root, "batch", "batch", 1, &batch);
  if (rc != 0) return rc;
  if ((rc = check_keys(c, batch, "batch", keys)) != 0) return rc;

  cJSON *txs = cJSON_GetObjectItemCaseSensitive(batch, "transactions");
  const cJSON *file = cJSON_GetObjectItemCaseSensitive(batch, "file");
  const cJSON *gen = cJSON_GetObjectItemCaseSensitive(batch, "generate");
  if ((txs != NULL) + (file != NULL) + (gen != NULL) != 1) {
    loaders_errf(c->err, c->errlen, "%s: batch: expected exactly one of 'transactions', 'file' or 'generate'", c->file);
    return PRSTM_ECONFIG;
  }

  if (txs != NULL) {
    if (!cJSON_IsArray(txs)) {
      loaders_errf(c->err, c->errlen, "%s: batch.transactions: expected an array", c->file);
      return PRSTM_ECONFIG;
    }
    cfg->batch_kind = PRSTM_BATCH_INLINE;
    /* The cast drops the const of the lookup helper only: the document is
     * this loader's own and is deleted right after parsing. */
    cfg->inline_json = cJSON_DetachItemViaPointer((cJSON *)batch, txs);
    return 0;
  }

  if (file != NULL) {
    if (!cJSON_IsString(file) || file->valuestring == NULL || file->valuestring[0] == '\0') {
      loaders_errf(c->err, c->errlen, "%s: batch.file: expected a non-empty string", c->file);
      return PRSTM_ECONFIG;
    }
    /* A relative batch file is found next to the config, so a config and its
     * data can be moved together and run from any working directory. The
     * folder is kept with its trailing slash, which also covers "/". */
    const char *slash = strrchr(c->file, '/');
    size_t dirlen = 0;
    if (file->valuestring[0] != '/' && slash != NULL) dirlen = (size_t)(slash - c->file) + 1;
    cfg->batch_kind = PRSTM_BATCH_FILE;
    return copy_path(c, "batch.file", cfg->batch_file, sizeof cfg->batch_file, c->file, dirlen, file->valuestring);
  }

  if (!cJSON_IsObject(gen)) {
    loaders_errf(c->err, c->errlen, "%s: batch.generate: expected an object", c->file);
    return PRSTM_ECONFIG;
  }
  cfg->batch_kind = PRSTM_BATCH_GENERATE;
  return parse_generate(c, gen, cfg->workload, &cfg->generate);
}

/* An output path is a non-empty string, or null (or absent) for no output. */
static int parse_output_path(const cfg_ctx *c, const cJSON *out, const char *key, const char *where, char *dst,
                             size_t dstlen) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(out, key);
  if (item == NULL || cJSON_IsNull(item)) return 0;
  if (!cJSON_IsString(item) || item->valuestring == NULL || item->valuestring[0] == '\0') {
    loaders_errf(c->err, c->errlen, "%s: %s: expected a path or null", c->file, where);
    return PRSTM_ECONFIG;
  }
  return copy_path(c, where, dst, dstlen, "", 0, item->valuestring);
}

static int parse_output(const cfg_ctx *c, const cJSON *root, prstm_config *cfg) {
  static const char *const keys[] = {"results", "final_state", NULL};
  const cJSON *out;
  int rc = get_object(c, root, "output", "output", 0, &out);
  if (rc != 0 || out == NULL) return rc;
  if ((rc = check_keys(c, out, "output", keys)) != 0) return rc;
  if ((rc = parse_output_path(c, out, "results", "output.results", cfg->results_path, sizeof cfg->results_path)) != 0)
    return rc;
  return parse_output_path(c, out, "final_state", "output.final_state", cfg->final_state_path,
                           sizeof cfg->final_state_path);
}

static int parse_config(const cfg_ctx *c, cJSON *root, prstm_config *cfg) {
  static const char *const keys[] = {"workload", "plugin", "engine", "state", "batch", "output", NULL};
  int rc;
  if (!cJSON_IsObject(root)) {
    loaders_errf(c->err, c->errlen, "%s: expected a JSON object", c->file);
    return PRSTM_ECONFIG;
  }
  if ((rc = check_keys(c, root, "", keys)) != 0) return rc;

  /* The workload comes first: the mix of a generated batch names its types.
   * A plugin brings its own; "workload" then only has to agree with it. */
  const char *name, *plugin;
  if ((rc = get_string(c, root, "plugin", "plugin", 0, &plugin)) != 0) return rc;
  if (plugin == NULL && cJSON_GetObjectItemCaseSensitive(root, "workload") == NULL) {
    /* The built-in workloads by name, as this build has them. */
    char names[256] = "";
    size_t used = 0;
    for (unsigned i = 0; prstm_workload_at(i) != NULL && used < sizeof names; i++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", prstm_workload_at(i)->name);
    loaders_errf(c->err, c->errlen,
                 "%s: workload: missing: name a built-in workload (%s) or give \"plugin\": the path of a workload "
                 "plugin",
                 c->file, names);
    return PRSTM_ECONFIG;
  }
  if ((rc = get_string(c, root, "workload", "workload", plugin == NULL, &name)) != 0) return rc;
  if (plugin != NULL) {
    if (plugin[0] == '\0') {
      loaders_errf(c->err, c->errlen, "%s: plugin: expected a non-empty path", c->file);
      return PRSTM_ECONFIG;
    }
    /* Found next to the config when relative, like batch.file. */
    const char *slash = strrchr(c->file, '/');
    size_t dirlen = plugin[0] != '/' && slash != NULL ? (size_t)(slash - c->file) + 1 : 0;
    if ((rc = copy_path(c, "plugin", cfg->plugin_path, sizeof cfg->plugin_path, c->file, dirlen, plugin)) != 0)
      return rc;
    char msg[1024];
    rc = prstm_plugin_open(cfg->plugin_path, &cfg->plugin, &cfg->workload, msg, sizeof msg);
    if (rc != 0) {
      loaders_errf(c->err, c->errlen, "%s: plugin: %s", c->file, msg);
      return rc;
    }
    if (name != NULL && strcmp(name, cfg->workload->name) != 0) {
      loaders_errf(c->err, c->errlen, "%s: workload: '%s' does not match the plugin's workload '%s'", c->file, name,
                   cfg->workload->name);
      return PRSTM_ECONFIG;
    }
  } else {
    cfg->workload = prstm_workload_find(name);
    if (cfg->workload == NULL) {
      loaders_errf(c->err, c->errlen, "%s: workload: unknown workload '%s'", c->file, name);
      return PRSTM_EUNKNOWN;
    }
  }
  /* Every knob starts at its default, in both specs, so a hook may read any. */
  prstm_state_spec_init(cfg->workload, &cfg->state);
  prstm_generate_spec_init(cfg->workload, &cfg->generate);
  for (unsigned i = 0; i < cfg->workload->nparams && i < PRSTM_MAX_PARAMS; i++)
    cfg->state.params[i] = cfg->generate.params[i] = cfg->workload->params[i].default_value;
  if ((rc = parse_engine(c, root, &cfg->options)) != 0) return rc;
  if ((rc = parse_state(c, root, cfg->workload, &cfg->state)) != 0) return rc;
  if ((rc = parse_batch(c, root, cfg)) != 0) return rc;
  return parse_output(c, root, cfg);
}

int prstm_config_load(const char *path, prstm_config *cfg, char *err, size_t errlen) {
  if (err != NULL && errlen > 0) err[0] = '\0';
  if (cfg == NULL || path == NULL) {
    loaders_errf(err, errlen, "prstm_config_load: invalid argument");
    return PRSTM_EINVAL;
  }
  /* Every field gets its default first, so that a config missing an optional
   * section and a config that failed halfway are both safe to free. */
  memset(cfg, 0, sizeof *cfg);
  prstm_options_init(&cfg->options);
  prstm_generate_spec_init(NULL, &cfg->generate);

  size_t plen = strlen(path);
  if (plen >= sizeof cfg->path) {
    loaders_errf(err, errlen, "%s: path too long (at most %zu bytes)", path, sizeof cfg->path - 1);
    return PRSTM_EINVAL;
  }
  memcpy(cfg->path, path, plen + 1);

  char *text;
  size_t len;
  int rc = loaders_read_text_file(path, &text, &len, err, errlen);
  if (rc != 0) return rc;
  size_t skip = loaders_json_bom(text, len);
  size_t off = 0;
  cJSON *root = loaders_json_parse(text + skip, len - skip, &off);
  if (root == NULL) {
    unsigned long line, col;
    loaders_json_position(text + skip, off, &line, &col);
    loaders_errf(err, errlen, "%s:%lu:%lu: malformed JSON%s", path, line, col,
                 /* From the byte before the stop: a block comment stops at its star. */
                 loaders_not_json_hint(text + skip + (off > 0 ? off - 1 : 0), len - skip - (off > 0 ? off - 1 : 0), 0));
    free(text);
    return PRSTM_EPARSE;
  }
  free(text);

  cfg_ctx c = {cfg->path, err, errlen};
  rc = parse_config(&c, root, cfg);
  cJSON_Delete(root);
  if (rc != 0) prstm_config_free(cfg);
  return rc;
}

void prstm_config_free(prstm_config *cfg) {
  if (cfg == NULL) return;
  cJSON_Delete((cJSON *)cfg->inline_json);
  cfg->inline_json = NULL;
  prstm_plugin_close(cfg->plugin);
  cfg->plugin = NULL;
}

int prstm_config_load_batch(const prstm_config *cfg, uint64_t nwords, prstm_batch *batch, char *err, size_t errlen) {
  if (err != NULL && errlen > 0) err[0] = '\0';
  if (cfg == NULL || batch == NULL || cfg->workload == NULL) {
    loaders_errf(err, errlen, "prstm_config_load_batch: invalid argument");
    return PRSTM_EINVAL;
  }
  switch (cfg->batch_kind) {
    case PRSTM_BATCH_INLINE: {
      const cJSON *arr = (const cJSON *)cfg->inline_json;
      if (!cJSON_IsArray(arr)) {
        loaders_errf(err, errlen, "%s: batch.transactions: not loaded", cfg->path);
        return PRSTM_EINVAL;
      }
      unsigned long i = 0;
      for (const cJSON *e = arr->child; e != NULL; e = e->next, i++) {
        char prefix[64];
        char msg[LOADERS_KEYPATH_MAX + 256];
        snprintf(prefix, sizeof prefix, "batch.transactions[%lu]", i);
        int rc = loaders_tx_from_json(e, cfg->workload, nwords, batch, prefix, msg, sizeof msg);
        if (rc != 0) {
          loaders_errf(err, errlen, "%s: %s", cfg->path, msg);
          return rc;
        }
      }
      if (i == 0) {
        loaders_errf(err, errlen, "%s: batch.transactions: batch is empty", cfg->path);
        return PRSTM_ECONFIG;
      }
      return 0;
    }
    case PRSTM_BATCH_FILE: {
      uint64_t before = prstm_batch_size(batch);
      /* A folder is a binary batch (batch_dir.c), a file JSON Lines. */
      struct stat st;
      const int folder = stat(cfg->batch_file, &st) == 0 && S_ISDIR(st.st_mode);
      int rc = folder ? prstm_load_batch_dir(cfg->batch_file, cfg->workload, nwords, batch, err, errlen)
                      : prstm_load_jsonl(cfg->batch_file, cfg->workload, nwords, batch, err, errlen);
      if (rc != 0) return rc;
      if (prstm_batch_size(batch) == before) {
        loaders_errf(err, errlen, "%s: batch is empty", cfg->batch_file);
        return PRSTM_ECONFIG;
      }
      return 0;
    }
    case PRSTM_BATCH_GENERATE: {
      if (cfg->workload->generate == NULL) {
        loaders_errf(err, errlen, "%s: batch.generate: workload %s has no generator", cfg->path, cfg->workload->name);
        return PRSTM_ECONFIG;
      }
      /* The generator's message does not know the file; it is prefixed so
       * that every loader error names the file first. */
      char msg[512];
      msg[0] = '\0';
      ENGINE_RANGE_PUSH("generate");
      int rc = cfg->workload->generate(&cfg->generate, &cfg->state, batch, msg, sizeof msg);
      ENGINE_RANGE_POP();
      if (rc != 0) {
        if (msg[0] != '\0')
          loaders_errf(err, errlen, "%s: batch.generate: %s", cfg->path, msg);
        else
          loaders_errf(err, errlen, "%s: batch.generate: %s", cfg->path, prstm_strerror(rc));
      }
      return rc;
    }
  }
  loaders_errf(err, errlen, "%s: batch: unknown batch kind", cfg->path);
  return PRSTM_EINVAL;
}
