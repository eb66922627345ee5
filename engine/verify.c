/* verify.c: the verification certificate: replay a run's committed and failed transactions serially in commit order and compare everything. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

typedef struct seq_row {
  uint64_t seq, row;
} seq_row;

static int by_seq(const void *a, const void *b) {
  const seq_row *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *status_word(unsigned status, unsigned reason, int replay) {
  if (status == PRSTM_COMMITTED) return "committed";
  if (status == PRSTM_FAILED) return "failed";
  if (status == PRSTM_ABANDONED) return replay && reason == PRSTM_REASON_RETRY_LIMIT ? "postponed" : "abandoned";
  return "pending";
}

/* A table of `m` rows copied from the batch in the order `rows` gives. */
typedef struct replay_table {
  prstm_table_view view;
  uint8_t *type, *status;
  uint64_t *args, *result, *row_id;
} replay_table;

static int replay_table_make(const prstm_batch *b, const seq_row *rows, uint64_t m, replay_table *t) {
  memset(t, 0, sizeof *t);
  size_t cells = (size_t)(m ? m : 1);
  t->type = malloc(cells);
  t->status = calloc(cells, 1);
  t->args = calloc(cells * (b->ncols ? b->ncols : 1), sizeof *t->args);
  t->result = b->has_read_only ? calloc(cells, sizeof *t->result) : NULL;
  t->row_id = malloc(cells * sizeof *t->row_id);
  if (!t->type || !t->status || !t->args || !t->row_id || (b->has_read_only && !t->result))
    return PRSTM_ENOMEM;
  for (uint64_t k = 0; k < m; k++) {
    uint64_t row = rows[k].row;
    /* prstm_row keeps naming the original row, so a body that claims a slot
     * by row claims the same slot in the replay. */
    t->row_id[k] = row;
    t->type[k] = b->type[row];
    for (uint32_t c = 0; c < b->ncols; c++) t->args[(uint64_t)c * m + k] = b->args[(uint64_t)c * b->cap + row];
  }
  t->view.n = m;
  t->view.stride = m;
  t->view.ncols = b->ncols;
  t->view.has_results = (uint32_t)b->has_read_only;
  t->view.type = t->type;
  t->view.status = t->status;
  t->view.args = t->args;
  t->view.result = t->result;
  t->view.row_id = t->row_id;
  return 0;
}

static void replay_table_free(replay_table *t) {
  free(t->type);
  free(t->status);
  free(t->args);
  free(t->result);
  free(t->row_id);
}

static int verify_fail(prstm_verify_report *rep, int64_t row, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int verify_fail(prstm_verify_report *rep, int64_t row, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rep->message, sizeof rep->message, fmt, ap);
  va_end(ap);
  rep->ok = 0;
  if (row >= 0) rep->first_transaction = row;
  return 0;
}

int prstm_engine_verify(prstm_engine *e, const prstm_batch *b, prstm_verify_report *rep) {
  if (!e || !b || !rep) return PRSTM_EINVAL;
  memset(rep, 0, sizeof *rep);
  rep->first_transaction = -1;
  rep->first_word = -1;
  if (!e->opt.verify || !e->initial || e->verify_batch != b || !b->seq)
    return prstm_engine_fail(e, PRSTM_EINVAL, "verification needs the batch's last run to be made with verify on");
  const prstm_workload *wl = e->wl;
  const prstm_worker_variant *v = prstm_pick_variant(wl, b->ncols);
  double t0 = prstm_now();

  /* Committed and failed rows, in the order their decisions were taken. */
  uint64_t m = 0, nabandoned = 0;
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned st = b->status[i] & PRSTM_STATUS_MASK;
    if (st == PRSTM_COMMITTED || st == PRSTM_FAILED) m++;
    else if (st == PRSTM_ABANDONED) nabandoned++;
  }
  seq_row *order = malloc((size_t)(m + nabandoned + 1) * sizeof *order);
  replay_table t = {0}, blocked = {0};
  prstm_word *words = malloc((size_t)e->nwords * sizeof *words);
  int rc = 0;
  if (!order || !words) {
    rc = prstm_engine_fail(e, PRSTM_ENOMEM, "cannot allocate the verification replay");
    goto out;
  }
  rep->ok = 1;
  uint64_t k = 0;
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned st = b->status[i] & PRSTM_STATUS_MASK;
    if (st != PRSTM_COMMITTED && st != PRSTM_FAILED) continue;
    if (b->seq[i] == UINT64_MAX) {
      verify_fail(rep, (int64_t)i, "transaction %llu (%s) is %s but has no place in the commit order",
                  (unsigned long long)i, wl->types[b->type[i]].name, status_word(st, 0, 0));
      goto out;
    }
    order[k].seq = b->seq[i];
    order[k].row = i;
    k++;
  }
  qsort(order, (size_t)m, sizeof *order, by_seq);
  for (uint64_t j = 1; j < m; j++) {
    if (order[j].seq == order[j - 1].seq) {
      verify_fail(rep, (int64_t)order[j].row, "transactions %llu and %llu share commit sequence %llu",
                  (unsigned long long)order[j - 1].row, (unsigned long long)order[j].row,
                  (unsigned long long)order[j].seq);
      goto out;
    }
  }

  /* Serial replay from the initial state, with the run's own bodies. */
  rc = replay_table_make(b, order, m, &t);
  if (rc) {
    prstm_engine_fail(e, rc, "cannot allocate the verification replay table");
    goto out;
  }
  memcpy(words, e->initial, (size_t)e->nwords * sizeof *words);
  rc = prstm_run_serial(wl, v, words, e->nwords, e->opt.lock_coverage, &t.view, e->err, sizeof e->err);
  if (rc) goto out;
  rep->replayed = m;
  for (uint64_t j = 0; j < m; j++) {
    uint64_t row = order[j].row;
    unsigned st = b->status[row] & PRSTM_STATUS_MASK, reason = b->status[row] >> PRSTM_STATUS_REASON_SHIFT;
    unsigned rst = t.status[j] & PRSTM_STATUS_MASK, rreason = t.status[j] >> PRSTM_STATUS_REASON_SHIFT;
    const char *name = wl->types[b->type[row]].name;
    if (st != rst || (st == PRSTM_FAILED && reason != rreason)) {
      verify_fail(rep, (int64_t)row,
                  "transaction %llu (%s), number %llu in commit order: the run says %s (%s), the serial replay %s (%s)",
                  (unsigned long long)row, name, (unsigned long long)j, status_word(st, reason, 0),
                  prstm_reason_string(wl, b->type[row], reason), status_word(rst, rreason, 1),
                  prstm_reason_string(wl, b->type[row], rreason));
      goto out;
    }
    if (st == PRSTM_COMMITTED && b->result && wl->types[b->type[row]].read_only && b->result[row] != t.result[j]) {
      verify_fail(rep, (int64_t)row, "transaction %llu (%s): the run's result is %llu, the serial replay's %llu",
                  (unsigned long long)row, name, (unsigned long long)b->result[row],
                  (unsigned long long)t.result[j]);
      goto out;
    }
  }
  for (uint64_t w = 0; w < e->nwords; w++) {
    if (words[w] != e->words[w]) {
      rep->first_word = (int64_t)w;
      verify_fail(rep, -1, "word %llu: the run ends with %llu, the serial replay with %llu", (unsigned long long)w,
                  (unsigned long long)e->words[w], (unsigned long long)words[w]);
      goto out;
    }
  }

  /* Abandoned at quiescence means blocked for good: each must still
   * postpone on the final state. Retry mode gives up on a schedule, not at
   * quiescence, so it makes no such claim. */
  if (e->opt.semantic == PRSTM_SEMANTIC_POSTPONE && nabandoned) {
    uint64_t a = 0;
    for (uint64_t i = 0; i < b->n; i++) {
      if ((b->status[i] & PRSTM_STATUS_MASK) != PRSTM_ABANDONED) continue;
      order[a].seq = a;
      order[a].row = i;
      a++;
    }
    rc = replay_table_make(b, order, a, &blocked);
    if (rc) {
      prstm_engine_fail(e, rc, "cannot allocate the blocked-transaction check");
      goto out;
    }
    memcpy(words, e->words, (size_t)e->nwords * sizeof *words);
    rc = prstm_run_serial(wl, v, words, e->nwords, e->opt.lock_coverage, &blocked.view, e->err, sizeof e->err);
    if (rc) goto out;
    rep->checked_blocked = a;
    for (uint64_t j = 0; j < a; j++) {
      unsigned rst = blocked.status[j] & PRSTM_STATUS_MASK, rreason = blocked.status[j] >> PRSTM_STATUS_REASON_SHIFT;
      if (rst != PRSTM_ABANDONED || rreason != PRSTM_REASON_RETRY_LIMIT) {
        uint64_t row = order[j].row;
        verify_fail(rep, (int64_t)row, "transaction %llu (%s) was abandoned, but on the final state it %s",
                    (unsigned long long)row, wl->types[b->type[row]].name,
                    rst == PRSTM_COMMITTED ? "commits" : "fails");
        goto out;
      }
    }
  }
  snprintf(rep->message, sizeof rep->message,
           "%llu transactions replayed serially in commit order: final state and every outcome match; "
           "%llu abandoned still blocked",
           (unsigned long long)rep->replayed, (unsigned long long)rep->checked_blocked);
out:
  rep->replay_s = prstm_now() - t0;
  replay_table_free(&t);
  replay_table_free(&blocked);
  free(order);
  free(words);
  return rc;
}
