/* ycsb.c: the ycsb workload's host side: types, knobs, the table of records, the batch generator (uniform or Zipfian keys) and the invariant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workload_util.h"
#include "ycsb_body.h"

PRSTM_CPU_WORKER(ycsb_small, ycsb_dispatch, YCSB_SMALL_CAPACITY)
PRSTM_CPU_WORKER(ycsb_wide, ycsb_dispatch, YCSB_WIDE_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(ycsb_small);
PRSTM_GPU_WORKER_DECLARE(ycsb_wide);

static const prstm_type_desc ycsb_types[] = {
    [YCSB_UPDATE] = {.name = "update",
                     .tag = 0,
                     .read_only = 0,
                     .nargs = 2,
                     .args = {{"kinds", PRSTM_ARG_UINT}, {"keys", PRSTM_ARG_ADDRESS_LIST}},
                     .reasons = {"an operation of kind 3 (0 read, 1 read-modify-write, 2 write)",
                                 "more than 32 operations"}},
    [YCSB_READ] = {.name = "read",
                   .tag = 0,
                   .read_only = 1,
                   .nargs = 1,
                   .args = {{"keys", PRSTM_ARG_ADDRESS_LIST}},
                   .reasons = {NULL}},
};

/* An update of reads and read-modify-writes only moves amounts: operation i
 * reads its word and adds its kind to it, 0 for a read and 1 for a
 * read-modify-write (the kind's two bits are the step's field), so hot
 * batches of such updates may run as sums (docs/DESIGN-NOTES.md, "Hot
 * spots"). A blind write (kind 2) or a kind of 3 is no step: a batch with
 * one runs through the STM. A read reads every key and returns their sum. */
_Static_assert(YCSB_OP_READ == 0 && YCSB_OP_RMW == 1, "a kind is its step's amount");
static const prstm_type_steps ycsb_steps[] = {
    [YCSB_UPDATE] = {1, {{1, 0, +1, PRSTM_DELTA_FIELDS(2, 1)}}},
    [YCSB_READ] = {1, {{0, 0, +1, PRSTM_DELTA_READ | PRSTM_DELTA_RESULT_SUM}}},
};

enum { YP_RECORDS = 0, YP_FIELDS, YP_OPS, YP_WRITES, YP_BLIND, YP_SKEW, YP_COUNT };
static const prstm_param_desc ycsb_params[YP_COUNT] = {
    {"records", PRSTM_PARAM_STATE, 1000000, 1, 1e9, 1, "records in the table"},
    {"fields", PRSTM_PARAM_STATE, 1, 1, 10, 1,
     "words a record (YCSB's fields): record r's field f is word r * fields + f"},
    {"ops", PRSTM_PARAM_GENERATE, 10, 1, YCSB_MAX_OPS, 1, "operations a transaction (YCSB's 10; at most 32)"},
    {"writes", PRSTM_PARAM_GENERATE, 1, 0, YCSB_MAX_OPS, 1,
     "how many of an update's operations write (its last ones); the others read"},
    {"blind", PRSTM_PARAM_GENERATE, 0, 0, 1, 1,
     "0: writes are read-modify-writes (a field plus one); 1: blind writes, which read nothing"},
    {"skew", PRSTM_PARAM_GENERATE, 0.0, 0.0, 4.0, 0,
     "Zipfian skew of the keys (YCSB's theta: 0 uniform, 0.99 YCSB's default; record 0 is the hottest)"},
};

typedef struct ycsb_shape {
  uint64_t records, fields;
} ycsb_shape;

static int ycsb_read_shape(const prstm_state_spec *spec, ycsb_shape *s, char *err, size_t errlen) {
  s->records = (uint64_t)spec->params[YP_RECORDS];
  s->fields = (uint64_t)spec->params[YP_FIELDS];
  if (s->records < 1 || s->fields < 1 || s->fields > 10 || (double)s->records != spec->params[YP_RECORDS]) {
    snprintf(err, errlen, "state.records and state.fields: expected whole numbers, records at least 1, fields 1 to 10");
    return PRSTM_ECONFIG;
  }
  return 0;
}

/* Word w starts as w: a read's result then names the words it read. */
static int ycsb_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                           size_t errlen) {
  ycsb_shape s;
  int rc = ycsb_read_shape(spec, &s, err, errlen);
  if (rc) return rc;
  const uint64_t n = s.records * s.fields;
  prstm_word *w = malloc((size_t)n * sizeof *w);
  if (!w) {
    snprintf(err, errlen, "cannot allocate %llu words", (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  for (uint64_t i = 0; i < n; i++) w[i] = i;
  *words = w;
  *nwords = n;
  return 0;
}

/* `transactions` rows of the mix (update by default), each of `ops`
 * operations on keys drawn uniformly or by the Zipfian skew; an update's
 * last `writes` operations write. */
/* What every block of a generated batch shares, read only. */
typedef struct ycsb_blocks {
  ycsb_shape s;
  unsigned ops;
  uint64_t kinds;       /* the update's operation kinds, two bits each */
  double cumulative[2]; /* update, read */
  const wl_zipf *zipf;  /* skewed keys, or NULL for uniform ones */
} ycsb_blocks;

static int ycsb_make_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  const ycsb_blocks *yb = ctx;
  const unsigned ops = yb->ops;
  prstm_word args[YCSB_MAX_OPS + 2];
  /* Operation i's field, i % fields, taken once a block, not a division an
   * operation. */
  uint64_t field[YCSB_MAX_OPS];
  for (unsigned i = 0; i < ops; i++) field[i] = i % yb->s.fields;
  int rc = 0;
  (void)first;
  for (uint64_t t = 0; rc == 0 && t < rows; t++) {
    const unsigned type = wl_pick(rng, yb->cumulative, 2);
    prstm_word *keys = type == YCSB_UPDATE ? args + 2 : args + 1;
    for (unsigned i = 0; i < ops; i++) {
      const uint64_t record = yb->zipf ? wl_zipf_draw(yb->zipf, rng) : wl_below(rng, yb->s.records);
      keys[i] = record * yb->s.fields + field[i];
    }
    if (type == YCSB_UPDATE) {
      args[0] = yb->kinds;
      args[1] = ops;
      rc = txtable_append_generated(part, YCSB_UPDATE, args, ops + 2);
    } else {
      args[0] = ops;
      rc = txtable_append_generated(part, YCSB_READ, args, ops + 1);
    }
  }
  return rc;
}

static int ycsb_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch, char *err,
                         size_t errlen) {
  ycsb_shape s;
  int rc = ycsb_read_shape(state, &s, err, errlen);
  if (rc) return rc;
  const unsigned ops = (unsigned)spec->params[YP_OPS], writes = (unsigned)spec->params[YP_WRITES];
  const unsigned write_kind = spec->params[YP_BLIND] != 0 ? YCSB_OP_WRITE : YCSB_OP_RMW;
  const double skew = spec->params[YP_SKEW];
  if (writes > ops) {
    snprintf(err, errlen, "writes: %u of %u operations; at most ops", writes, ops);
    return PRSTM_ECONFIG;
  }
  if (spec->semantic_ratio != 0) {
    snprintf(err, errlen, "semantic_ratio: ycsb's transactions have no semantic dependencies (got %g)",
             spec->semantic_ratio);
    return PRSTM_ECONFIG;
  }
  double w[2] = {1.0, 0.0}, cumulative[2];
  if ((rc = wl_mix_weights(spec, batch, w, 2, NULL, err, errlen)) != 0 ||
      (rc = wl_read_only_share(spec, w, 1, "update", err, errlen)) != 0 ||
      (rc = wl_cumulate(w, cumulative, 2, err, errlen)) != 0)
    return rc;
  wl_zipf zipf;
  const int skewed = skew > 0;
  if (skewed && wl_zipf_init(&zipf, s.records, skew, spec->threads) != 0) {
    snprintf(err, errlen, "cannot allocate the Zipfian table");
    return PRSTM_ENOMEM;
  }
  ycsb_blocks blocks = {s, ops, 0, {cumulative[0], cumulative[1]}, skewed ? &zipf : NULL};
  for (unsigned i = ops - writes; i < ops; i++) blocks.kinds |= (uint64_t)write_kind << (2 * i);
  rc = wl_generate_blocks(batch, spec->transactions, spec->seed, spec->threads, blocks.ops + 2, ycsb_make_block,
                          &blocks);
  if (skewed) wl_zipf_free(&zipf);
  return wl_generated(batch, rc, spec->presorted, err, errlen);
}

/* Read-modify-writes commute, so a word only they change ends at its first
 * value plus the committed ones on it, whatever the order; a word written
 * blindly ends as the order chose, which --verify certifies. Every row of a
 * well-formed batch commits. */
static int ycsb_check_invariant(const prstm_engine *engine, const prstm_batch *batch, int *ok, char *msg,
                                size_t msglen) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  uint64_t *plus = calloc((size_t)(nwords ? nwords : 1), sizeof *plus);
  uint8_t *blind = calloc((size_t)(nwords ? nwords : 1), 1);
  if (!plus || !blind) {
    free(plus);
    free(blind);
    snprintf(msg, msglen, "cannot allocate the invariant's counts");
    return PRSTM_ENOMEM;
  }
  const uint64_t n = prstm_batch_size(batch);
  uint64_t committed = 0, other = 0;
  for (uint64_t r = 0; r < n; r++) {
    prstm_status st;
    prstm_batch_outcome(batch, r, &st, NULL, NULL);
    if (st != PRSTM_COMMITTED) {
      other++;
      continue;
    }
    committed++;
    if (prstm_batch_type(batch, r) != YCSB_UPDATE) continue;
    const uint64_t kinds = prstm_batch_arg(batch, r, 0), count = prstm_batch_arg(batch, r, 1);
    for (uint64_t i = 0; i < count && i < YCSB_MAX_OPS; i++) {
      const uint64_t word = prstm_batch_arg(batch, r, 2 + (unsigned)i);
      if (word >= nwords) continue;
      const unsigned kind = (kinds >> (2 * i)) & 3u;
      if (kind == YCSB_OP_RMW) plus[word]++;
      if (kind == YCSB_OP_WRITE) blind[word] = 1;
    }
  }
  /* The initial state of a run is not kept, so the check holds against the
   * state init_state makes (word w starts as w): with a state set another
   * way it would not know the first values. */
  const int own_state = prstm_engine_state_spec(engine) != NULL;
  uint64_t differ = 0, first = 0, blind_words = 0;
  for (uint64_t i = 0; own_state && i < nwords; i++) {
    if (blind[i]) {
      blind_words++;
      continue;
    }
    if (w[i] != i + plus[i] && differ++ == 0) first = i;
  }
  *ok = differ == 0 && other == 0;
  if (!own_state)
    snprintf(msg, msglen,
             "%llu of %llu transactions committed; the state was set directly, so the words are "
             "certified by --verify alone",
             (unsigned long long)committed, (unsigned long long)n);
  else if (differ)
    snprintf(msg, msglen,
             "%llu words differ from their first value plus their read-modify-writes; the first, word "
             "%llu, holds %llu, expected %llu",
             (unsigned long long)differ, (unsigned long long)first, (unsigned long long)w[first],
             (unsigned long long)(first + plus[first]));
  else
    snprintf(msg, msglen,
             "every word written only by read-modify-writes holds its first value plus them (%llu "
             "words written blindly: --verify certifies those); %llu of %llu transactions committed",
             (unsigned long long)blind_words, (unsigned long long)committed, (unsigned long long)n);
  if (!own_state) *ok = other == 0;
  free(plus);
  free(blind);
  return 0;
}

const prstm_workload prstm_workload_ycsb = {
    .name = "ycsb",
    .ntypes = sizeof ycsb_types / sizeof ycsb_types[0],
    .types = ycsb_types,
    .nvariants = 2,
    .variants = {{.max_columns = YCSB_SMALL_COLUMNS,
                  .set_capacity = YCSB_SMALL_CAPACITY,
                  .cpu_worker = ycsb_small_cpu_worker,
                  PRSTM_GPU_HOOKS(ycsb_small)},
                 {.max_columns = YCSB_WIDE_COLUMNS,
                  .set_capacity = YCSB_WIDE_CAPACITY,
                  .cpu_worker = ycsb_wide_cpu_worker,
                  PRSTM_GPU_HOOKS(ycsb_wide)}},
    .init_state = ycsb_init_state,
    .generate = ycsb_generate,
    .check_invariant = ycsb_check_invariant,
    .config_keys = 0,
    .nparams = YP_COUNT,
    .params = ycsb_params,
    .steps = ycsb_steps,
};
