/* watchdog.h: the one watchdog of every run and stream unit: when neither a commit nor a failure is published for watchdog_s seconds, the run is told to stop. */
#ifndef WATCHDOG_H
#define WATCHDOG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each backend's wait loop reads the published progress words in its own
 * way (host atomics, or a copy from the device) and hands the count of
 * decisions to watchdog_tick; the loop sets the stop word when told to. */
typedef struct watchdog {
  uint32_t limit_s; /* 0: never stop */
  uint64_t last;    /* commits plus failures last seen; UINT64_MAX before the first tick */
  double last_t;    /* when they last moved */
  int stalled;      /* the run was told to stop */
} watchdog;

void watchdog_start(watchdog *w, uint32_t limit_s, double now);
/* Feeds the commits plus failures read at `now`; returns 1 once, the first
 * time they have not moved for the limit: the caller then stops the run. */
int watchdog_tick(watchdog *w, uint64_t decided, double now);

/* The pause of a wait loop between two looks: it starts at
 * WATCHDOG_FIRST_PAUSE_NS and doubles up to WATCHDOG_LAST_PAUSE_NS, so that
 * a run of a few milliseconds is not held up by a long first sleep, and a
 * long one is watched without a busy host thread. The run's end is not
 * left to those looks, which would let a run end up to a whole pause
 * before its wait does: a CPU run's last thread wakes the loop, and a GPU
 * run's loop asks whether the kernel ended every WATCHDOG_END_POLL_NS,
 * a question that costs the host a microsecond or two. */
#define WATCHDOG_END_POLL_NS (25L * 1000)
#define WATCHDOG_FIRST_PAUSE_NS (50L * 1000)
#define WATCHDOG_LAST_PAUSE_NS (20L * 1000 * 1000)
static inline long watchdog_next_pause_ns(long pause_ns) {
  return pause_ns * 2 < WATCHDOG_LAST_PAUSE_NS ? pause_ns * 2 : WATCHDOG_LAST_PAUSE_NS;
}

#ifdef __cplusplus
}
#endif

#endif /* WATCHDOG_H */
