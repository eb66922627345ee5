/* seats.c: the seat-booking example's host side: types, knobs, initial state, invariant, and its plugin entry. */
#include <stdio.h>
#include <stdlib.h>

#include "seats_body.h"

/* The CPU worker (seats_cpu_worker); the GPU one comes from seats_gpu.cu,
 * and this declares its launcher and thread limit for the descriptor. */
PRSTM_CPU_WORKER(seats, seats_dispatch, SEATS_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(seats);

/* The types, indexed like seats_dispatch's switch. A batch names a type by
 * .name and its arguments by the names in .args; .reasons are the strings of
 * PRSTM_REASON_USER + 0 to + 3, in order. */
static const prstm_type_desc seats_types[] = {
    [SEATS_BOOK] = {.name = "book",
                    .tag = 0,
                    .read_only = 0,
                    .nargs = 2,
                    .args = {{"show", PRSTM_ARG_UINT}, {"customer", PRSTM_ARG_UINT}},
                    .reasons = {"no such show or customer", "customer already holds a seat of this show"}},
    [SEATS_RELEASE] = {.name = "release",
                       .tag = 1, /* runs before the bookings it funds */
                       .read_only = 0,
                       .nargs = 2,
                       .args = {{"show", PRSTM_ARG_UINT}, {"customer", PRSTM_ARG_UINT}},
                       .reasons = {"no such show or customer"}},
    [SEATS_FREE] = {.name = "free",
                    .tag = 0,
                    .read_only = 1, /* its result is reported */
                    .nargs = 1,
                    .args = {{"show", PRSTM_ARG_UINT}},
                    .reasons = {"no such show or customer"}},
};

/* The knobs of the config's state section, e.g. {"shows": 4, "seats": 10,
 * "customers": 100, "booked": 2}; init_state reads them in
 * spec->params[SEATS_P_...]. */
enum { SEATS_P_SHOWS, SEATS_P_SEATS, SEATS_P_CUSTOMERS, SEATS_P_BOOKED };
static const prstm_param_desc seats_params[] = {
    [SEATS_P_SHOWS] = {.name = "shows",
                       .section = PRSTM_PARAM_STATE,
                       .default_value = 4,
                       .min = 1,
                       .max = 1e6,
                       .integer = 1,
                       .help = "number of shows"},
    [SEATS_P_SEATS] = {.name = "seats",
                       .section = PRSTM_PARAM_STATE,
                       .default_value = 10,
                       .min = 0,
                       .max = 1e9,
                       .integer = 1,
                       .help = "seats per show"},
    [SEATS_P_CUSTOMERS] = {.name = "customers",
                           .section = PRSTM_PARAM_STATE,
                           .default_value = 100,
                           .min = 1,
                           .max = 1e6,
                           .integer = 1,
                           .help = "customers who may book"},
    [SEATS_P_BOOKED] = {.name = "booked",
                        .section = PRSTM_PARAM_STATE,
                        .default_value = 0,
                        .min = 0,
                        .max = 1e6,
                        .integer = 1,
                        .help = "customers 0 to booked-1 start with a seat of every show"},
};

/* Hook: the initial words from the knobs. Hands back a malloc'd array
 * (the engine frees it), or an error code with a message in err. */
static int seats_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                            size_t errlen) {
  uint64_t shows = (uint64_t)spec->params[SEATS_P_SHOWS];
  uint64_t customers = (uint64_t)spec->params[SEATS_P_CUSTOMERS];
  uint64_t seats = (uint64_t)spec->params[SEATS_P_SEATS], booked = (uint64_t)spec->params[SEATS_P_BOOKED];
  if (booked > customers || booked > seats) {
    snprintf(err, errlen, "state.booked (%llu) exceeds the customers or the seats of a show",
             (unsigned long long)booked);
    return PRSTM_ECONFIG;
  }
  uint64_t n = SEATS_HEADER + shows * (customers + 1);
  prstm_word *w = calloc((size_t)n, sizeof *w);
  if (w == NULL) {
    snprintf(err, errlen, "cannot allocate %llu words", (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  w[0] = shows;
  w[1] = customers;
  for (uint64_t s = 0; s < shows; s++) {
    uint64_t base = seats_show_base(customers, s);
    w[base] = seats - booked;
    for (uint64_t c = 0; c < booked; c++) w[base + 1 + c] = 1;
  }
  *words = w;
  *nwords = n;
  return 0;
}

/* Hook: what must hold after any run, from the final state and the batch's
 * outcomes; sets *ok and writes a one-line verdict into msg.
 * For every show, free seats plus seats held equal its seats, and the seats
 * held equal those booked at the start plus committed bookings minus
 * committed releases; every abandoned booking is of a show still sold out. */
static int seats_check_invariant(const prstm_engine *engine, const prstm_batch *batch, int *ok, char *msg,
                                 size_t msglen) {
  uint64_t nwords;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  const prstm_state_spec *spec = prstm_engine_state_spec(engine);
  uint64_t shows = w[0], customers = w[1];
  uint64_t seats = spec ? (uint64_t)spec->params[SEATS_P_SEATS] : 0;
  int64_t booked = spec ? (int64_t)spec->params[SEATS_P_BOOKED] : 0;
  int64_t *net = calloc((size_t)shows, sizeof *net); /* bookings minus releases, per show */
  if (net == NULL) return PRSTM_ENOMEM;
  uint64_t bad_abandoned = 0;
  for (uint64_t i = 0, n = prstm_batch_size(batch); i < n; i++) {
    prstm_status st;
    unsigned reason;
    prstm_batch_outcome(batch, i, &st, &reason, NULL);
    unsigned t = prstm_batch_type(batch, i);
    uint64_t show = prstm_batch_arg(batch, i, 0);
    if (show >= shows) continue;
    if (st == PRSTM_COMMITTED && t == SEATS_BOOK) net[show]++;
    if (st == PRSTM_COMMITTED && t == SEATS_RELEASE) net[show]--;
    if (st == PRSTM_ABANDONED && t == SEATS_BOOK && w[seats_show_base(customers, show)] != 0) bad_abandoned++;
  }
  uint64_t bad_shows = 0;
  for (uint64_t s = 0; s < shows; s++) {
    uint64_t base = seats_show_base(customers, s), held = 0;
    for (uint64_t c = 0; c < customers; c++) held += w[base + 1 + c];
    if (w[base] + held != seats || (int64_t)held != booked + net[s]) bad_shows++;
  }
  free(net);
  *ok = bad_shows == 0 && bad_abandoned == 0;
  snprintf(msg, msglen,
           "%llu of %llu shows with free + held != %llu seats or held != initially booked + bookings - releases; "
           "%llu abandoned bookings of shows with free seats",
           (unsigned long long)bad_shows, (unsigned long long)shows, (unsigned long long)seats,
           (unsigned long long)bad_abandoned);
  return 0;
}

/* The descriptor. One worker variant serves every batch: rows of up to
 * PRSTM_MAX_COLUMNS argument words, with SEATS_CAPACITY set entries. */
const prstm_workload seats_workload = {
    .name = "seats",
    .ntypes = sizeof seats_types / sizeof seats_types[0],
    .types = seats_types,
    .nvariants = 1,
    .variants = {{.max_columns = PRSTM_MAX_COLUMNS,
                  .set_capacity = SEATS_CAPACITY,
                  .cpu_worker = seats_cpu_worker,
                  PRSTM_GPU_HOOKS(seats)}},
    .init_state = seats_init_state,
    .check_invariant = seats_check_invariant,
    .nparams = sizeof seats_params / sizeof seats_params[0],
    .params = seats_params,
};

/* Lets prstm-run load this workload from libseats.so ("plugin" in a config). */
PRSTM_PLUGIN(seats_workload)
