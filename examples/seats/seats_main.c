/* seats_main.c: a batch job with the seat-booking workload built in: waitlisted bookings served by a release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "seats_body.h"

extern const prstm_workload seats_workload;

/* Prints the engine's message and gives up; only main exits. */
static int fail(const char *what, prstm_engine *e, int rc) {
  fprintf(stderr, "seats: %s: %s\n", what, e ? prstm_engine_error(e) : prstm_strerror(rc));
  return 1;
}

int main(int argc, char **argv) {
  prstm_options opt;
  prstm_options_init(&opt);
  opt.verify = 1; /* replay the run serially and compare */
  if (argc > 1 && strcmp(argv[1], "--gpu") == 0)
    opt.backend = PRSTM_BACKEND_GPU;
  else if (argc > 1 && strcmp(argv[1], "--cpu") == 0)
    opt.backend = PRSTM_BACKEND_CPU;
  else if (argc > 1) {
    fprintf(stderr, "usage: seats [--cpu|--gpu]\n");
    return 2;
  }

  prstm_engine *e = NULL;
  int rc = prstm_engine_create(&e, &seats_workload, &opt);
  if (rc) return fail("create", e, rc);
  /* Two shows of three seats, eight customers; customers 0 and 1 start with
   * a seat of each show, so one seat of each is free. */
  prstm_state_spec spec;
  prstm_state_spec_init(&seats_workload, &spec);
  spec.params[prstm_param_find(&seats_workload, "shows")] = 2;
  spec.params[prstm_param_find(&seats_workload, "seats")] = 3;
  spec.params[prstm_param_find(&seats_workload, "customers")] = 8;
  spec.params[prstm_param_find(&seats_workload, "booked")] = 2;
  if ((rc = prstm_engine_init_state(e, &spec))) return fail("state", e, rc);

  /* Show 0: customers 2, 3 and 4 book its one free seat: one gets it, one
   * waits for the seat customer 0 gives back, and the last stays on the
   * waitlist until the run ends (abandoned). Customer 1 books again and
   * fails. Then a free-seats query of each show. */
  prstm_batch *b = NULL;
  if ((rc = prstm_batch_create(&b, &seats_workload))) return fail("batch", e, rc);
  static const prstm_word rows[][3] = {{SEATS_BOOK, 0, 2},    {SEATS_BOOK, 0, 3}, {SEATS_BOOK, 0, 4},
                                       {SEATS_RELEASE, 0, 0}, {SEATS_BOOK, 0, 1}, {SEATS_FREE, 0, 0},
                                       {SEATS_FREE, 1, 0}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !rc; i++)
    rc = prstm_batch_append(b, (unsigned)rows[i][0], &rows[i][1], rows[i][0] == SEATS_FREE ? 1 : 2);
  if (rc) return fail("append", e, rc);

  prstm_results res;
  if ((rc = prstm_engine_run(e, b, &res))) return fail("run", e, rc);
  static const char *const status_names[] = {"pending", "committed", "abandoned", "failed"};
  for (uint64_t i = 0; i < prstm_batch_size(b); i++) {
    prstm_status st;
    unsigned reason, t = prstm_batch_type(b, i);
    prstm_word result;
    prstm_batch_outcome(b, i, &st, &reason, &result);
    printf("%llu %-7s show %llu", (unsigned long long)i, seats_workload.types[t].name,
           (unsigned long long)prstm_batch_arg(b, i, 0));
    if (t != SEATS_FREE) printf(" customer %llu", (unsigned long long)prstm_batch_arg(b, i, 1));
    printf(": %s", status_names[st]);
    if (t == SEATS_FREE && st == PRSTM_COMMITTED) printf(", %llu free", (unsigned long long)result);
    if (st == PRSTM_ABANDONED || st == PRSTM_FAILED) printf(" (%s)", prstm_reason_string(&seats_workload, t, reason));
    printf("\n");
  }
  int ok = 0;
  char msg[256];
  if ((rc = seats_workload.check_invariant(e, b, &ok, msg, sizeof msg))) return fail("invariant", e, rc);
  prstm_verify_report v;
  if ((rc = prstm_engine_verify(e, b, &v))) return fail("verify", e, rc);
  printf("committed %llu, abandoned %llu, failed %llu on %s\n", (unsigned long long)res.committed,
         (unsigned long long)res.abandoned, (unsigned long long)res.failed, res.device);
  printf("invariant %s: %s\nverify %s: %s\n", ok ? "ok" : "VIOLATED", msg, v.ok ? "ok" : "FAILED", v.message);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
  return ok && v.ok ? 0 : 1;
}
