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

/* A table of `m` rows copied from the source in the order `rows` gives,
 * each keeping the number prstm_row gave it in the run, so that a body that
 * claims a slot by row claims the same slot in the replay. */
typedef struct replay_table {
  txtable_view view;
  uint8_t *type, *status;
  uint64_t *args, *result, *row_id, *read_hash;
} replay_table;

static uint64_t source_row_number(const engine_verify_source *src, uint64_t r) {
  return src->row_number ? src->row_number[r] : r;
}

static int replay_table_make(const engine_verify_source *src, const seq_row *rows, uint64_t m, replay_table *t) {
  const prstm_batch *b = src->table;
  memset(t, 0, sizeof *t);
  size_t cells = (size_t)(m ? m : 1);
  t->type = malloc(cells);
  t->status = calloc(cells, 1);
  t->args = calloc(cells * (b->ncols ? b->ncols : 1), sizeof *t->args);
  t->result = b->has_read_only ? calloc(cells, sizeof *t->result) : NULL;
  t->row_id = malloc(cells * sizeof *t->row_id);
  t->read_hash = calloc(cells, sizeof *t->read_hash);
  if (!t->type || !t->status || !t->args || !t->row_id || !t->read_hash || (b->has_read_only && !t->result))
    return PRSTM_ENOMEM;
  for (uint64_t k = 0; k < m; k++) {
    uint64_t row = rows[k].row;
    t->row_id[k] = source_row_number(src, row);
    t->type[k] = b->type[row];
    for (uint32_t c = 0; c < b->ncols; c++) t->args[(uint64_t)c * m + k] = txtable_get(b, c, row);
  }
  t->view.n = m;
  t->view.stride = m;
  t->view.ncols = b->ncols;
  t->view.has_results = (uint32_t)b->has_read_only;
  t->view.type = t->type;
  t->view.status = t->status;
  t->view.args = t->args;
  t->view.result = t->result;
  t->view.read_hash = t->read_hash;
  t->view.ids_from = 0;
  t->view.row_id = t->row_id;
  return 0;
}

static void replay_table_free(replay_table *t) {
  free(t->type);
  free(t->status);
  free(t->args);
  free(t->result);
  free(t->row_id);
  free(t->read_hash);
}

/* Names a row of the source the way its owner knows it: its row in the
 * batch, and the batch's number in a stream. */
static const char *row_name(const engine_verify_source *src, uint64_t r, char *buf, size_t len) {
  if (src->item)
    snprintf(buf, len, "transaction %llu of batch %llu", (unsigned long long)src->item_row[r],
             (unsigned long long)src->item[r]);
  else
    snprintf(buf, len, "transaction %llu", (unsigned long long)r);
  return buf;
}

static int verify_fail(prstm_verify_report *rep, const engine_verify_source *src, int64_t r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int verify_fail(prstm_verify_report *rep, const engine_verify_source *src, int64_t r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rep->message, sizeof rep->message, fmt, ap);
  va_end(ap);
  rep->ok = 0;
  if (r >= 0) {
    rep->first_transaction = src->item ? (int64_t)src->item_row[r] : r;
    rep->first_batch = src->item ? (int64_t)src->item[r] : -1;
  }
  return 0;
}

/* The checks on the table alone, before any replay: every row final, and
 * every decided row holding a sequence number of its own that was taken. */
static int verify_table_shape(const engine_verify_source *src, const seq_row *order, uint64_t m,
                              prstm_verify_report *rep) {
  const prstm_batch *b = src->table;
  const prstm_workload *wl = b->wl;
  const engine_verify_counts *c = src->counts;
  char name[96];
  for (uint64_t i = 0; i < b->n; i++) {
    if ((b->status[i] & TXTABLE_STATUS_MASK) == PRSTM_PENDING)
      return verify_fail(rep, src, (int64_t)i, "%s (%s) is still pending, but the run completed",
                         row_name(src, i, name, sizeof name), wl->types[b->type[i]].name);
  }
  for (uint64_t j = 0; j < m; j++) {
    uint64_t r = order[j].row;
    if (order[j].seq == UINT64_MAX)
      return verify_fail(rep, src, (int64_t)r, "%s (%s) is %s but has no place in the commit order",
                         row_name(src, r, name, sizeof name), wl->types[b->type[r]].name,
                         status_word(b->status[r] & TXTABLE_STATUS_MASK, 0, 0));
    if (order[j].seq >= c->sequences)
      return verify_fail(rep, src, (int64_t)r,
                         "%s (%s) holds commit sequence %llu, but the run took only %llu sequence numbers",
                         row_name(src, r, name, sizeof name), wl->types[b->type[r]].name,
                         (unsigned long long)order[j].seq, (unsigned long long)c->sequences);
    if (j > 0 && order[j].seq == order[j - 1].seq) {
      char other[96];
      return verify_fail(rep, src, (int64_t)r, "%s and %s share commit sequence %llu",
                         row_name(src, order[j - 1].row, other, sizeof other), row_name(src, r, name, sizeof name),
                         (unsigned long long)order[j].seq);
    }
  }
  return 0;
}

int engine_verify_rows(prstm_engine *e, const engine_verify_source *src, prstm_verify_report *rep) {
  const prstm_batch *b = src->table;
  const prstm_workload *wl = e->wl;
  const prstm_worker_variant *v = src->variant ? src->variant : engine_pick_variant(wl, b->ncols);
  const prstm_word *final = src->final ? src->final : e->words;
  double t0 = engine_now();
  char name[96];
  const engine_verify_counts *c = src->counts;

  /* Committed and failed rows, in the order their decisions were taken. */
  uint64_t m = 0, committed = 0, failed = 0, abandoned = 0;
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned st = b->status[i] & TXTABLE_STATUS_MASK;
    committed += st == PRSTM_COMMITTED;
    failed += st == PRSTM_FAILED;
    abandoned += st == PRSTM_ABANDONED;
  }
  m = committed + failed;
  seq_row *order = malloc((size_t)(m + abandoned + 1) * sizeof *order);
  replay_table t = {0}, blocked = {0};
  prstm_word *words = malloc((size_t)e->nwords * sizeof *words);
  int rc = 0;
  if (!order || !words || !v) {
    rc = engine_fail(e, PRSTM_ENOMEM, "cannot allocate the verification replay");
    goto out;
  }
  rep->ok = 1;
  uint64_t k = 0;
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned st = b->status[i] & TXTABLE_STATUS_MASK;
    if (st != PRSTM_COMMITTED && st != PRSTM_FAILED) continue;
    order[k].seq = b->seq[i];
    order[k].row = i;
    k++;
  }
  qsort(order, (size_t)m, sizeof *order, by_seq);
  verify_table_shape(src, order, m, rep);
  if (!rep->ok) goto out;

  /* Serial replay from the initial state, with the run's own bodies. */
  rc = replay_table_make(src, order, m, &t);
  if (rc) {
    engine_fail(e, rc, "cannot allocate the verification replay table");
    goto out;
  }
  memcpy(words, src->initial, (size_t)e->nwords * sizeof *words);
  rc = engine_run_serial(wl, v, words, e->nwords, e->opt.lock_coverage, src->unchecked_types, &t.view, e->err,
                         sizeof e->err);
  if (rc) goto out;
  rep->replayed = m;
  for (uint64_t j = 0; j < m; j++) {
    uint64_t row = order[j].row;
    unsigned st = b->status[row] & TXTABLE_STATUS_MASK, reason = b->status[row] >> TXTABLE_REASON_SHIFT;
    unsigned rst = t.status[j] & TXTABLE_STATUS_MASK, rreason = t.status[j] >> TXTABLE_REASON_SHIFT;
    const char *type = wl->types[b->type[row]].name;
    if (st != rst || (st == PRSTM_FAILED && reason != rreason)) {
      verify_fail(rep, src, (int64_t)row,
                  "%s (%s), number %llu in commit order: the run says %s (%s), the serial replay %s (%s)",
                  row_name(src, row, name, sizeof name), type, (unsigned long long)j, status_word(st, reason, 0),
                  prstm_reason_string(wl, b->type[row], reason), status_word(rst, rreason, 1),
                  prstm_reason_string(wl, b->type[row], rreason));
      goto out;
    }
    if (st == PRSTM_COMMITTED && b->result && wl->types[b->type[row]].read_only && b->result[row] != t.result[j]) {
      verify_fail(rep, src, (int64_t)row, "%s (%s): the run's result is %llu, the serial replay's %llu",
                  row_name(src, row, name, sizeof name), type, (unsigned long long)b->result[row],
                  (unsigned long long)t.result[j]);
      goto out;
    }
    if (b->read_hash && b->read_hash[row] != t.read_hash[j]) {
      verify_fail(rep, src, (int64_t)row,
                  "%s (%s), number %llu in commit order: it read other values in the run than in the serial "
                  "replay (read hash %016llx against %016llx)",
                  row_name(src, row, name, sizeof name), type, (unsigned long long)j,
                  (unsigned long long)b->read_hash[row], (unsigned long long)t.read_hash[j]);
      goto out;
    }
  }
  for (uint64_t w = 0; w < e->nwords; w++) {
    if (words[w] != final[w]) {
      rep->first_word = (int64_t)w;
      verify_fail(rep, src, -1, "word %llu: the run ends with %llu, the serial replay with %llu", (unsigned long long)w,
                  (unsigned long long) final[w], (unsigned long long)words[w]);
      goto out;
    }
  }

  /* Abandoned at quiescence means blocked for good: each must still
   * postpone on the final state. Retry mode gives up on a schedule, not at
   * quiescence, so it makes no such claim. */
  if (e->opt.semantic == PRSTM_SEMANTIC_POSTPONE && abandoned) {
    uint64_t a = 0;
    for (uint64_t i = 0; i < b->n; i++) {
      if ((b->status[i] & TXTABLE_STATUS_MASK) != PRSTM_ABANDONED) continue;
      order[a].seq = a;
      order[a].row = i;
      a++;
    }
    rc = replay_table_make(src, order, a, &blocked);
    if (rc) {
      engine_fail(e, rc, "cannot allocate the blocked-transaction check");
      goto out;
    }
    memcpy(words, final, (size_t)e->nwords * sizeof *words);
    rc = engine_run_serial(wl, v, words, e->nwords, e->opt.lock_coverage, src->unchecked_types, &blocked.view, e->err,
                           sizeof e->err);
    if (rc) goto out;
    rep->checked_blocked = a;
    for (uint64_t j = 0; j < a; j++) {
      unsigned rst = blocked.status[j] & TXTABLE_STATUS_MASK, rreason = blocked.status[j] >> TXTABLE_REASON_SHIFT;
      if (rst != PRSTM_ABANDONED || rreason != PRSTM_REASON_RETRY_LIMIT) {
        uint64_t row = order[j].row;
        verify_fail(rep, src, (int64_t)row, "%s (%s) was abandoned, but on the final state it %s",
                    row_name(src, row, name, sizeof name), wl->types[b->type[row]].name,
                    rst == PRSTM_COMMITTED ? "commits" : "fails");
        goto out;
      }
    }
  }
  /* Last, as the least specific: the statuses must add up to the decisions
   * the threads counted, or some row was decided twice, or lost one. */
  if (committed != c->committed || failed != c->failed || abandoned != c->abandoned) {
    verify_fail(rep, src, -1,
                "the table holds %llu committed, %llu failed and %llu abandoned transactions, but the run counted "
                "%llu, %llu and %llu decisions: a transaction was decided twice or its outcome was lost",
                (unsigned long long)committed, (unsigned long long)failed, (unsigned long long)abandoned,
                (unsigned long long)c->committed, (unsigned long long)c->failed, (unsigned long long)c->abandoned);
    goto out;
  }
  snprintf(rep->message, sizeof rep->message,
           "%llu transactions replayed serially in commit order: final state and every outcome match; "
           "%llu abandoned still blocked",
           (unsigned long long)rep->replayed, (unsigned long long)rep->checked_blocked);
out:
  rep->replay_s = engine_now() - t0;
  replay_table_free(&t);
  replay_table_free(&blocked);
  free(order);
  free(words);
  return rc;
}

void engine_verify_report_init(prstm_verify_report *rep) {
  memset(rep, 0, sizeof *rep);
  rep->first_transaction = -1;
  rep->first_batch = -1;
  rep->first_word = -1;
}

int prstm_engine_verify(prstm_engine *e, const prstm_batch *b, prstm_verify_report *rep) {
  if (!e || !b || !rep) return PRSTM_EINVAL;
  engine_verify_report_init(rep);
  if (!e->opt.verify || !e->initial || e->verify_batch != b || !b->seq)
    return engine_fail(e, PRSTM_EINVAL, "verification needs the batch's last run to be made with verify on");
  engine_verify_source src;
  memset(&src, 0, sizeof src);
  src.table = b;
  src.initial = e->initial;
  src.counts = &e->verify_counts;
  src.variant = e->verify_variant;
  src.unchecked_types = e->verify_snapshot_types;
  return engine_verify_rows(e, &src, rep);
}
