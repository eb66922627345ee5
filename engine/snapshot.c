/* snapshot.c: rows of snapshot types (queries over many words) run on the host, on the state a whole run starts from, and placed first in its commit order. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

uint64_t engine_snapshot_types(const prstm_workload *wl) {
  return wl->ntypes >= 64 ? wl->snapshot_types : wl->snapshot_types & ((1ull << wl->ntypes) - 1);
}

void engine_snapshot_free(engine_snapshot *s) {
  free(s->row);
  free(s->status);
  free(s->result);
  free(s->seq);
  free(s->read_hash);
  memset(s, 0, sizeof *s);
}

/* A read-only query over the whole state (the sum of 2.5M balances) cannot
 * run through the STM: its read set would need a slot per word, and with
 * invisible reads any commit to any of them while it runs would fail it
 * again, so under load it would never commit. The state a run starts from
 * is consistent and, on the host, nobody changes it while the rows run
 * here: read without a read set, on one thread, they see exactly that
 * state. Serializability holds with them first in the commit order, as
 * read-only transactions before every other. */
int engine_snapshot_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, uint64_t types,
                        engine_snapshot *s) {
  memset(s, 0, sizeof *s);
  uint64_t k = 0;
  for (uint64_t i = 0; i < b->n; i++) k += (types >> b->type[i]) & 1u;
  if (k == 0) return 0;
  const size_t cells = (size_t)k;
  s->row = malloc(cells * sizeof *s->row);
  s->status = calloc(cells, 1);
  s->result = calloc(cells, sizeof *s->result);
  s->seq = malloc(cells * sizeof *s->seq);
  s->read_hash = calloc(cells, sizeof *s->read_hash);
  uint8_t *type = malloc(cells);
  uint64_t *args = calloc(cells * (b->ncols ? b->ncols : 1), sizeof *args);
  if (!s->row || !s->status || !s->result || !s->seq || !s->read_hash || !type || !args) {
    free(type);
    free(args);
    engine_snapshot_free(s);
    return engine_fail(e, PRSTM_ENOMEM, "cannot allocate the %llu rows of snapshot types", (unsigned long long)k);
  }
  for (uint64_t i = 0, j = 0; i < b->n; i++) {
    if (!((types >> b->type[i]) & 1u)) continue;
    s->row[j] = i;
    type[j] = b->type[i];
    for (uint32_t c = 0; c < b->ncols; c++) args[(uint64_t)c * k + j] = txtable_get(b, c, i);
    j++;
  }
  txtable_view view;
  memset(&view, 0, sizeof view);
  view.n = k;
  view.stride = k;
  view.ncols = b->ncols;
  view.has_results = 1;
  view.type = type;
  view.status = s->status;
  view.args = args;
  view.result = s->result;
  view.seq = b->seq ? s->seq : NULL;
  view.read_hash = b->read_hash ? s->read_hash : NULL;
  /* Each row keeps the number prstm_row gives it in the batch. */
  txtable_view whole;
  txtable_view_of(b, &whole);
  uint64_t *number = malloc(cells * sizeof *number);
  if (!number) {
    free(type);
    free(args);
    engine_snapshot_free(s);
    return engine_fail(e, PRSTM_ENOMEM, "cannot allocate the %llu rows of snapshot types", (unsigned long long)k);
  }
  for (uint64_t j = 0; j < k; j++) number[j] = txtable_row_number(&whole, s->row[j]);
  view.row_id = number;
  view.ids_from = 0;
  int rc = engine_run_serial(e->wl, v, e->words, e->nwords, e->opt.lock_coverage, types, &view, e->err, sizeof e->err);
  free(type);
  free(args);
  free(number);
  if (rc) {
    engine_snapshot_free(s);
    return rc;
  }
  s->k = k;
  for (uint64_t j = 0; j < k; j++) {
    const unsigned st = s->status[j] & TXTABLE_STATUS_MASK;
    if (st == TXTABLE_COMMITTED)
      s->committed++;
    else if (st == TXTABLE_FAILED)
      s->failed++;
    else
      s->abandoned++;
    if (!b->seq) s->seq[j] = UINT64_MAX;
  }
  engine_snapshot_finish(e, b, s, NULL);
  return 0;
}

void engine_snapshot_finish(prstm_engine *e, prstm_batch *b, const engine_snapshot *s, prstm_results *res) {
  if (s->k == 0) return;
  if (res) {
    /* The threads' places in the commit order follow the snapshot rows'. */
    if (b->seq)
      for (uint64_t i = 0; i < b->n; i++)
        if (b->seq[i] != UINT64_MAX) b->seq[i] += s->k;
    e->last_run_sequences += s->k;
    res->committed += s->committed;
    res->failed += s->failed;
    res->abandoned += s->abandoned;
  }
  for (uint64_t j = 0; j < s->k; j++) {
    const uint64_t i = s->row[j];
    b->status[i] = s->status[j];
    if (b->result) b->result[i] = s->result[j];
    if (b->seq) b->seq[i] = s->seq[j];
    if (b->read_hash) b->read_hash[i] = s->read_hash[j];
  }
}

void engine_snapshot_undo(prstm_batch *b, const engine_snapshot *s) {
  for (uint64_t j = 0; j < s->k; j++) {
    const uint64_t i = s->row[j];
    b->status[i] = 0;
    if (b->result) b->result[i] = 0;
    if (b->seq) b->seq[i] = UINT64_MAX;
    if (b->read_hash) b->read_hash[i] = 0;
  }
}
