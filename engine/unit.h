/* unit.h: one unit of a run spread over several executors (co-execution, several GPUs): an engine of its own with a replica of the state and a backend stream. */
#ifndef UNIT_H
#define UNIT_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A list of batch rows that grows as needed. */
typedef struct unit_rowlist {
  uint64_t *row;
  uint64_t n, cap;
} unit_rowlist;

/* Appends a row; PRSTM_ENOMEM (message in e) when the list cannot grow. */
int unit_rowlist_push(prstm_engine *e, unit_rowlist *l, uint64_t row);

/* One unit: its own engine (options, replica, footprint marks), its stream
 * and the rows of its current part. */
typedef struct unit {
  prstm_engine *e;
  const backend_ops *ops;
  backend_stream *bs;
  backend_stream_info info;
  int is_gpu;
  uint64_t *rows; /* the batch rows of the current part */
  uint64_t n, cap;
  backend_outcomes out;
  double busy_s, copy_s, execute_s; /* of the current part */
  int rc;                           /* of a launch on a thread of its own */
  const prstm_batch *b;
  int final;       /* the part runs to the end: rows nothing funds are abandoned */
  int fill_parts;  /* stage on every core: no other unit is filling */
  backend_unit bu; /* the staged part, between unit_stage and unit_start */
  int borrowed;    /* its engine's words are the run's own (a partitioned state), not a replica */
} unit;

/* What every unit of one run shares. */
typedef struct unit_shape {
  const prstm_batch *b;
  const prstm_worker_variant *v;
  int results;            /* the workload has a read-only type */
  uint64_t nlocks;        /* the marks' size */
  uint64_t round_rows;    /* the most rows a part takes */
  uint64_t max_unit_rows; /* a GPU stream's unit size, 0: the streams' default */
  int span_only;          /* keep the footprint's span (unit_span), not its marks */
} unit_shape;

/* Opens the unit: its engine, a copy of e's words as its replica, zeroed
 * marks (or an empty span) and a stream of `backend` with `threads` (0: the backend's choice)
 * on GPU `device` (ignored on the CPU). Where held_hi is not 0 the state
 * is partitioned: the unit holds words [held_lo, held_hi) alone (a GPU
 * unit's memory has no others), its engine's words are e's own, and a row
 * that touches another word is sent away (TXTABLE_REASON_AWAY). Errors
 * carry a message in e. */
int unit_open(prstm_engine *e, unit *u, const unit_shape *shape, prstm_backend backend, uint32_t threads, int device,
              uint64_t held_lo, uint64_t held_hi);
void unit_close(unit *u);
/* Room for a part of n rows. */
int unit_reserve_rows(prstm_engine *e, unit *u, uint64_t n);
/* Stages the part (every row with its batch row number, as a stream's
 * carried rows are) and starts it; the CPU runs it to its end here.
 * unit_stage and unit_start are its two halves, so that several GPUs'
 * parts can be staged first and then started together. */
int unit_launch(unit *u);
int unit_stage(unit *u);
int unit_start(unit *u);
/* unit_launch on a thread of its own (pthread start routine; rc in u->rc). */
void *unit_launch_thread(void *u);
/* Waits for the part and keeps its outcomes and times. */
int unit_wait(prstm_engine *e, unit *u);
/* Rows of the part still pending (status 0). */
uint64_t unit_pending(const unit *u);
/* Writes the part's outcomes into the batch (on every core for a large
 * part), its commit order numbered from seq_base on, adds its decisions to
 * res, and pushes its pending rows onto carry. Rows sent away (a
 * partitioned unit's, TXTABLE_REASON_AWAY) are not kept: they go onto away,
 * which may be NULL where none can be. *decided: the rows it decided. */
int unit_keep(prstm_engine *e, prstm_batch *b, const unit *u, uint64_t seq_base, prstm_results *res, uint64_t *decided,
              unit_rowlist *carry, unit_rowlist *away);
/* Clears the unit's footprint: its marks, or empties its span. */
void unit_clear_footprint(unit *u, uint64_t nlocks);
/* The unit's name in messages: "GPU unit", "CPU unit". */
const char *unit_name(const unit *u);

#ifdef __cplusplus
}
#endif

#endif /* UNIT_H */
