/* watchdog.c: the watchdog's clock, and the message a stopped run reports. */
#include "watchdog.h"

#include "engine_internal.h"

void watchdog_start(watchdog *w, uint32_t limit_s, double now) {
  w->limit_s = limit_s;
  w->last = UINT64_MAX;
  w->last_t = now;
  w->stalled = 0;
}

int watchdog_tick(watchdog *w, uint64_t decided, double now) {
  if (decided != w->last) {
    w->last = decided;
    w->last_t = now;
    return 0;
  }
  if (w->limit_s == 0 || w->stalled || now - w->last_t <= (double)w->limit_s) return 0;
  w->stalled = 1;
  return 1;
}

int engine_watchdog_error(prstm_engine *e, const prstm_batch *b) {
  uint64_t final = 0;
  for (uint64_t i = 0; i < b->n; i++) final += (b->status[i] & TXTABLE_STATUS_MASK) != PRSTM_PENDING;
  return engine_fail(e, PRSTM_ESTALLED,
                     "no transaction committed or failed for %u s, so the watchdog stopped the run "
                     "(%llu of %llu transactions were final; engine.watchdog_s sets the limit)",
                     e->opt.watchdog_s, (unsigned long long) final, (unsigned long long)b->n);
}
