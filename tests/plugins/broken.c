/* broken.c: a test plugin whose types break prstm-run's promises on purpose (a body that is not deterministic, an invariant that fails, a livelock, a failure), so that the tests can see each exit status and report. */
#include <stdio.h>
#include <stdlib.h>

#include "prstm_tx.h"

/* The state: word 0 says whether the workload's invariant holds (state knob
 * "invariant"), then `words` counters. */
enum { BROKEN_FLAG_WORD = 0, BROKEN_FIRST_COUNTER = 1 };
enum { BROKEN_STAMP = 0, BROKEN_BUMP = 1, BROKEN_SPIN = 2, BROKEN_REJECT = 3 };

/* Each execution of a stamp takes the next value of a process-wide counter,
 * so the serial replay writes other values than the run did: a body that
 * is not a function of its arguments and reads, which --verify must catch.
 * Host-only, which is why this plugin has no GPU code. */
static uint64_t broken_clock;

static int broken_stamp(prstm_tx *tx) {
  uint64_t w = BROKEN_FIRST_COUNTER + prstm_arg(tx, 0);
  prstm_read(tx, w);
  prstm_write(tx, w, __atomic_add_fetch(&broken_clock, 1, __ATOMIC_RELAXED));
  return PRSTM_COMMIT;
}

static int broken_bump(prstm_tx *tx) {
  uint64_t w = BROKEN_FIRST_COUNTER + prstm_arg(tx, 0);
  prstm_write(tx, w, prstm_read(tx, w) + 1);
  return PRSTM_COMMIT;
}

/* Meets a concurrent conflict on every attempt, forever: the watchdog must
 * stop the run. */
static int broken_spin(prstm_tx *tx) {
  prstm_read(tx, BROKEN_FIRST_COUNTER + prstm_arg(tx, 0));
  stm_tx_doom(tx, STM_TX_CONFLICT);
  return PRSTM_COMMIT;
}

static int broken_reject(prstm_tx *tx) {
  prstm_read(tx, BROKEN_FIRST_COUNTER + prstm_arg(tx, 0));
  return prstm_fail(tx, PRSTM_REASON_USER + 0);
}

static int broken_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case BROKEN_STAMP:
      return broken_stamp(tx);
    case BROKEN_BUMP:
      return broken_bump(tx);
    case BROKEN_SPIN:
      return broken_spin(tx);
    default:
      return broken_reject(tx);
  }
}

PRSTM_CPU_WORKER(broken, broken_dispatch, 4)

static const prstm_type_desc broken_types[] = {
    {"stamp", 0, 0, 1, {{"counter", PRSTM_ARG_UINT}}, {NULL}},
    {"bump", 0, 0, 1, {{"counter", PRSTM_ARG_UINT}}, {NULL}},
    {"spin", 0, 0, 1, {{"counter", PRSTM_ARG_UINT}}, {NULL}},
    {"reject", 0, 0, 1, {{"counter", PRSTM_ARG_UINT}}, {"rejected on purpose", NULL}},
};

enum { BROKEN_P_WORDS, BROKEN_P_INVARIANT };
static const prstm_param_desc broken_params[] = {
    {"words", PRSTM_PARAM_STATE, 4, 1, 1e6, 1, "counters"},
    {"invariant", PRSTM_PARAM_STATE, 1, 0, 1, 1, "1: the invariant holds, 0: it is violated"},
};

static int broken_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                             size_t errlen) {
  uint64_t n = BROKEN_FIRST_COUNTER + (uint64_t)spec->params[BROKEN_P_WORDS];
  prstm_word *w = calloc((size_t)n, sizeof *w);
  if (!w) {
    snprintf(err, errlen, "cannot allocate %llu words", (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  w[BROKEN_FLAG_WORD] = (prstm_word)spec->params[BROKEN_P_INVARIANT];
  *words = w;
  *nwords = n;
  return 0;
}

static int broken_check_invariant(const prstm_engine *engine, const prstm_batch *batch, int *ok, char *msg,
                                  size_t msglen) {
  (void)batch;
  *ok = prstm_engine_state(engine, NULL)[BROKEN_FLAG_WORD] == 1;
  snprintf(msg, msglen, "state.invariant is %s", *ok ? "1" : "0, so the invariant fails on purpose");
  return 0;
}

const prstm_workload broken_workload = {
    .name = "broken",
    .ntypes = sizeof broken_types / sizeof broken_types[0],
    .types = broken_types,
    .nvariants = 1,
    .variants = {{PRSTM_MAX_COLUMNS, 4, broken_cpu_worker, NULL, NULL}},
    .init_state = broken_init_state,
    .check_invariant = broken_check_invariant,
    .nparams = sizeof broken_params / sizeof broken_params[0],
    .params = broken_params,
};

PRSTM_PLUGIN(broken_workload)
