/* multi.c: one batch run by several units (the GPUs of one host or of ranks that mpirun started, or sets of CPU threads where none is usable), each owning a range of the locks, with rows routed to the unit that owns every word they name and the rest run by the first unit on the merged state. */
#define _GNU_SOURCE
#include "multi_link.h"
#include "multi_ranks.h"
#include "ranges.h"
#include "unit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The model (docs/MULTIGPU.md). The locks are cut into as many equal
 * ranges as there are units, and unit k owns range k. Every unit keeps a
 * replica of the whole state. A round hands out a slice of the batch: a row
 * whose words (as the host sees them: address arguments, or the workload's
 * row_words) all lie in one unit's range goes to that unit, and any other
 * row (one that spans ranges, or whose words the host cannot see) is a
 * cross row. The units run their parts at once, each on its replica; the
 * parts share no word, so any order of them is a serial order, and the
 * round takes unit 0's rows, then unit 1's, and so on. Each unit then
 * broadcasts the words it wrote (the span of the locks it wrote under, which
 * each thread tracks as it decides rows and folds in once) into every
 * other replica: through NCCL between GPUs, by copies between CPU units.
 * The cross rows of the round then run on unit 0, whose replica now holds
 * every word, and it broadcasts what they wrote. Rows still postponed at
 * the end of a part are carried to a later round; once every row was
 * handed out, unit 0 runs what is left to the end, abandoning only what
 * nothing funds. The first round is a sixteenth of the batch, a probe: a
 * unit whose rows read or wrote outside its range (a body that touches
 * words its arguments do not name) shows that the host cannot route this
 * workload's rows, so the round's parts are discarded, every replica is
 * reset from the host's mirror of the state as the round began, and from
 * then on every row runs on unit 0.
 *
 * Ranks. Where mpirun started the program as several processes, each is
 * one unit (a GPU of its host, or a set of CPU threads) and every rank
 * runs this same code on the same batch: each plans every round alike,
 * runs its own part, and broadcasts its part's outcomes through MPI and
 * the words it wrote through NCCL between GPUs (MPI between CPU units),
 * so that every rank keeps the same outcomes, carried rows and state. */

#define MULTI_MAX_UNITS 64u
#define MULTI_CROSS 0xffu

typedef struct multi_run {
  prstm_engine *e;
  prstm_batch *b;
  const prstm_worker_variant *v;
  unsigned n; /* units */
  unit u[MULTI_MAX_UNITS];
  uint64_t lock_lo[MULTI_MAX_UNITS + 1]; /* unit k owns locks [lock_lo[k], lock_lo[k + 1]) */
  uint64_t nlocks;
  int gpu;
  multi_link *link;
  uint64_t *replica[MULTI_MAX_UNITS]; /* each unit's words: in its GPU's memory, or its engine's */
  unit_rowlist carry;                 /* rows postponed, waiting for a round */
  unit cross;                         /* the cross rows of a round: unit 0 runs them (shares u[0]'s stream) */
  uint64_t next_new;                  /* rows [0, next_new) were handed to some round */
  uint64_t seq_base;                  /* commit-order numbers of the parts kept so far */
  uint64_t *cand;                     /* the candidates of a round */
  uint8_t *owner;                     /* and the unit each goes to (MULTI_CROSS: none) */
  uint64_t cand_cap;
  int results;
  int ranked, rank;               /* the units are processes (mpirun), and this one is unit `rank` */
  int rank_device;                /* a rank's GPU, where the ranks' units are GPUs */
  uint64_t slot[MULTI_MAX_UNITS]; /* the rows each unit's part can hold */
  /* A rank's copies of the other ranks' outcomes, by part (the cross part
   * last), each room for slot rows. */
  uint8_t *rx_status[MULTI_MAX_UNITS + 1];
  uint64_t *rx_words[MULTI_MAX_UNITS + 1]; /* result, seq, read_hash: three columns of rx_cap rows */
  uint64_t rx_cap[MULTI_MAX_UNITS + 1];
  int routed;         /* rows go to the unit that owns their words (until one strays) */
  int caller_device;  /* the caller's current GPU, made current again at the end */
  double execute_s;   /* the units' execution: each round's longest part, and its cross part */
  prstm_word *mirror; /* the state as the current round began (replicas only) */
  /* A partitioned state: each unit holds its range of the words alone, and
   * the host, which holds them all, runs the cross rows and the rows the
   * units sent away (docs/MULTIGPU.md). */
  int partitioned;
  int partition_refused;              /* asked for, but the state has fewer locks than units */
  unit host;                          /* the host's unit: the run's own words, on its cores */
  unit_rowlist away;                  /* rows a unit sent away, for the host */
  uint64_t stale_lo[MULTI_MAX_UNITS]; /* words a GPU unit wrote that the host's words lack */
  uint64_t stale_hi[MULTI_MAX_UNITS];
} multi_run;

/* Whether unit k runs in this process. */
static int multi_local(const multi_run *m, unsigned k) { return !m->ranked || k == (unsigned)m->rank; }

/* The replica this process holds (a rank's own; unit 0's otherwise). */
static unit *multi_home(multi_run *m) { return &m->u[m->ranked ? m->rank : 0]; }

/* The unit that owns lock l. */
static unsigned multi_owner(const multi_run *m, uint64_t l) {
  unsigned k = (unsigned)(l * m->n / m->nlocks);
  if (k >= m->n) k = m->n - 1;
  while (k + 1 < m->n && l >= m->lock_lo[k + 1]) k++;
  while (k > 0 && l < m->lock_lo[k]) k--;
  return k;
}

/* Planning a round on every core: each part of the candidates numbers
 * its new rows, finds each row's unit (MULTI_CROSS where its words span
 * units' ranges or the host cannot see them) and counts them by unit;
 * then, from the offsets those counts give, writes its rows into the
 * units' parts, in candidate order. */
typedef struct route_job {
  multi_run *m;
  uint64_t from_carry, first_new;
  unit *dest[MULTI_MAX_UNITS + 1]; /* by unit, the cross part last */
  uint64_t count[ENGINE_MAX_PARTS][MULTI_MAX_UNITS + 1];
} route_job;

static unsigned route_slot(const multi_run *m, uint8_t owner) { return owner == MULTI_CROSS ? m->n : owner; }

static void route_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  route_job *j = arg;
  multi_run *m = j->m;
  const uint64_t cov = m->e->opt.lock_coverage;
  uint64_t words[64], *count = j->count[part];
  for (uint64_t k = from; k < to; k++) {
    if (k >= j->from_carry) m->cand[k] = j->first_new + (k - j->from_carry);
    unsigned owner = MULTI_CROSS;
    const unsigned nw = m->routed ? engine_row_words(m->e, m->b, m->cand[k], words, 64) : 0;
    for (unsigned i = 0; i < nw; i++) {
      if (words[i] >= m->e->nwords) {
        owner = MULTI_CROSS;
        break;
      }
      const unsigned o = multi_owner(m, stm_lock_index(words[i], cov));
      if (i == 0)
        owner = o;
      else if (o != owner) {
        owner = MULTI_CROSS;
        break;
      }
    }
    m->owner[k] = (uint8_t)owner;
    count[route_slot(m, (uint8_t)owner)]++;
  }
}

static void scatter_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  route_job *j = arg;
  multi_run *m = j->m;
  uint64_t *at = j->count[part]; /* this part's first place in each unit's part */
  for (uint64_t k = from; k < to; k++) {
    const unsigned s = route_slot(m, m->owner[k]);
    j->dest[s]->rows[at[s]++] = m->cand[k];
  }
}

/* Fills the round's parts: carried rows first (at most half the round, so
 * that new rows, which may fund them, keep coming), then new rows, each to
 * the unit that owns its words or to the cross part. A part never takes
 * more than its unit's slots; the rows beyond wait for a later round. */
static int multi_plan(multi_run *m, uint64_t round_rows) {
  uint64_t from_carry = m->carry.n < round_rows / 2 ? m->carry.n : round_rows / 2;
  uint64_t from_new = m->b->n - m->next_new;
  if (from_new > round_rows - from_carry) from_new = round_rows - from_carry;
  if (from_new == 0) from_carry = m->carry.n < round_rows ? m->carry.n : round_rows;
  const uint64_t total = from_carry + from_new;
  if (total > m->cand_cap) {
    uint64_t *c = realloc(m->cand, (size_t)total * sizeof *c);
    if (c) m->cand = c;
    uint8_t *o = c ? realloc(m->owner, (size_t)total) : NULL;
    if (o) m->owner = o;
    if (!c || !o) return engine_fail(m->e, PRSTM_ENOMEM, "cannot plan a round of %llu rows", (unsigned long long)total);
    m->cand_cap = total;
  }
  if (from_carry) memcpy(m->cand, m->carry.row, (size_t)from_carry * sizeof *m->cand);
  if (from_carry && m->carry.n > from_carry)
    memmove(m->carry.row, m->carry.row + from_carry, (size_t)(m->carry.n - from_carry) * sizeof *m->carry.row);
  m->carry.n -= from_carry;
  route_job *job = calloc(1, sizeof *job);
  if (!job) return engine_fail(m->e, PRSTM_ENOMEM, "cannot plan a round of %llu rows", (unsigned long long)total);
  job->m = m;
  job->from_carry = from_carry;
  job->first_new = m->next_new;
  m->next_new += from_new;
  for (unsigned k = 0; k < m->n; k++) job->dest[k] = &m->u[k];
  job->dest[m->n] = &m->cross;
  const unsigned parts = engine_parallel_parts(total, PRSTM_POLICY_HETERO_ROWS_PER_PART);
  engine_parallel_for(total, parts, route_part, job);
  /* Each part's counts become its offsets; a unit whose rows outnumber its
   * slots takes the sequential path below, which carries the rest. */
  int fits = 1;
  for (unsigned s = 0; s <= m->n; s++) {
    uint64_t at = 0;
    for (unsigned p = 0; p < parts; p++) {
      const uint64_t c = job->count[p][s];
      job->count[p][s] = at;
      at += c;
    }
    job->dest[s]->n = at;
    if (at > job->dest[s]->cap) fits = 0;
  }
  if (fits) {
    engine_parallel_for(total, parts, scatter_part, job);
    free(job);
    return 0;
  }
  free(job);
  for (unsigned k = 0; k < m->n; k++) m->u[k].n = 0;
  m->cross.n = 0;
  for (uint64_t k = 0; k < total; k++) {
    const unsigned o = m->owner[k];
    unit *u = o == MULTI_CROSS ? &m->cross : &m->u[o];
    int rc;
    if (u->n < u->cap)
      u->rows[u->n++] = m->cand[k];
    else if ((rc = unit_rowlist_push(m->e, &m->carry, m->cand[k])) != 0)
      return rc;
  }
  return 0;
}

/* Whether the unit's decided rows read or wrote under a lock outside
 * [from, to). */
static int span_strays(const uint64_t *span, uint64_t from, uint64_t to) {
  return span[STM_SPAN_LO] < span[STM_SPAN_HI] && (span[STM_SPAN_LO] < from || span[STM_SPAN_HI] > to);
}

/* The words under the locks the unit wrote under, [*lo, *hi) (empty when
 * it wrote nothing). */
static void span_written_words(const multi_run *m, const uint64_t *span, uint64_t *lo, uint64_t *hi) {
  const uint64_t cov = m->e->opt.lock_coverage;
  *lo = *hi = 0;
  if (span[STM_SPAN_WRITE_LO] >= span[STM_SPAN_WRITE_HI]) return;
  *lo = span[STM_SPAN_WRITE_LO] * cov;
  *hi = span[STM_SPAN_WRITE_HI] * cov < m->e->nwords ? span[STM_SPAN_WRITE_HI] * cov : m->e->nwords;
}

/* Broadcasts words [lo[r], hi[r]) of every unit r's replica into every
 * other replica. */
static int multi_exchange(multi_run *m, const uint64_t *lo, const uint64_t *hi) {
  int rc = 0;
  if (m->gpu) {
    /* Every GPU's replica in one process; a rank's own in a rank. */
    uint64_t *const *replicas = m->ranked ? &m->replica[m->rank] : m->replica;
    rc = multi_link_exchange(m->link, replicas, lo, hi, m->e->err, sizeof m->e->err);
  } else if (m->ranked) {
    uint64_t *words = multi_home(m)->e->words;
    for (unsigned r = 0; r < m->n && !rc; r++)
      if (hi[r] > lo[r])
        rc = multi_ranks_bcast(words + lo[r], (hi[r] - lo[r]) * sizeof *words, (int)r, m->e->err, sizeof m->e->err);
  } else {
    for (unsigned r = 0; r < m->n; r++)
      for (unsigned i = 0; i < m->n && hi[r] > lo[r]; i++)
        if (i != r) memcpy(m->replica[i] + lo[r], m->replica[r] + lo[r], (size_t)(hi[r] - lo[r]) * sizeof(uint64_t));
  }
  return rc;
}

/* The unit's footprint span on the host (a GPU's copied out and emptied
 * there). */
static int multi_take_span(multi_run *m, unit *u) {
  if (!u->ops->footprint_take) return 0;
  int rc = u->ops->footprint_take(u->e, u->bs);
  return rc ? engine_fail(m->e, rc, "%s: %s", unit_name(u), u->e->err) : 0;
}

/* Runs the units' parts at once: every GPU's part staged first, then all
 * started back to back, so that their copies and kernels overlap; each
 * CPU unit's on a thread of its own. Then waits for all. */
static int multi_run_parts(multi_run *m) {
  pthread_t tid[MULTI_MAX_UNITS];
  int threaded[MULTI_MAX_UNITS] = {0}, started[MULTI_MAX_UNITS] = {0};
  int rc = 0;
  for (unsigned k = 0; k < m->n && !rc; k++) {
    unit *u = &m->u[k];
    if (u->n && u->is_gpu && (rc = unit_stage(u)) != 0)
      rc = engine_fail(m->e, rc, "%s %u: %s", unit_name(u), k, u->e->err);
  }
  for (unsigned k = 0; k < m->n && !rc; k++) {
    unit *u = &m->u[k];
    if (!u->n || !multi_local(m, k)) continue;
    if (u->is_gpu) {
      rc = unit_start(u);
      if (rc)
        rc = engine_fail(m->e, rc, "%s %u: %s", unit_name(u), k, u->e->err);
      else
        started[k] = 1;
    } else {
      u->rc = 0;
      if (!m->ranked && k + 1 < m->n && pthread_create(&tid[k], NULL, unit_launch_thread, u) == 0)
        threaded[k] = 1;
      else
        u->rc = unit_launch(u);
      started[k] = 1;
    }
  }
  for (unsigned k = 0; k < m->n; k++)
    if (threaded[k]) pthread_join(tid[k], NULL);
  for (unsigned k = 0; k < m->n && !rc; k++)
    if (started[k] && !m->u[k].is_gpu && m->u[k].rc)
      rc = engine_fail(m->e, m->u[k].rc, "%s %u: %s", unit_name(&m->u[k]), k, m->u[k].e->err);
  /* Every launched part is waited for, even after an error, so that no
   * kernel outlives the run's memory. */
  for (unsigned k = 0; k < m->n; k++) {
    if (!started[k]) continue;
    int w = unit_wait(m->e, &m->u[k]);
    if (!rc) rc = w;
  }
  return rc;
}

/* The mirror takes words [lo[r], hi[r]) for every r < count from unit 0's
 * replica, which holds them all after an exchange. */
static int multi_mirror_take(multi_run *m, const uint64_t *lo, const uint64_t *hi, unsigned count) {
  unit *u0 = multi_home(m);
  for (unsigned r = 0; r < count; r++) {
    if (hi[r] <= lo[r]) continue;
    if (u0->ops->state_read) {
      int rc = u0->ops->state_read(u0->e, u0->bs, m->mirror, lo[r], hi[r]);
      if (rc) return engine_fail(m->e, rc, "%s 0: %s", unit_name(u0), u0->e->err);
    } else {
      memcpy(m->mirror + lo[r], u0->e->words + lo[r], (size_t)(hi[r] - lo[r]) * sizeof *m->mirror);
    }
  }
  return 0;
}

/* Every replica reset to the mirror. */
static int multi_restore(multi_run *m) {
  for (unsigned k = 0; k < m->n; k++) {
    unit *u = &m->u[k];
    if (!multi_local(m, k)) continue;
    if (u->ops->state_write) {
      int rc = u->ops->state_write(u->e, u->bs, m->mirror, 0, m->e->nwords);
      if (rc) return engine_fail(m->e, rc, "%s %u: %s", unit_name(u), k, u->e->err);
    } else {
      memcpy(u->e->words, m->mirror, (size_t)m->e->nwords * sizeof *m->mirror);
    }
    unit_clear_footprint(u, m->nlocks);
  }
  return 0;
}

/* What a part's unit tells every rank about it (ranks only): whether its
 * rows strayed out of its range, the words it wrote, which outcome
 * columns follow, its published counts and its execution time. */
typedef struct multi_part_head {
  uint64_t strayed, lo, hi;
  uint64_t columns; /* bit 0: results; bit 1: commit order and read hashes */
  uint64_t q[STM_Q_WORDS];
  double execute_s;
} multi_part_head;

/* The head of a part that ran here. */
static void multi_head_of(const unit *u, multi_part_head *h) {
  h->columns = (u->out.result ? 1u : 0u) | (u->out.seq && u->out.read_hash ? 2u : 0u);
  memcpy(h->q, u->out.q, sizeof h->q);
  h->execute_s = u->execute_s;
}

/* Ranks: part `slot` (unit slot's, or slot n: unit 0's cross or final
 * part) ran on rank root; its head and outcomes go to every other rank,
 * whose copy of the part then reads them from its own buffers. Every rank
 * calls it for the same parts in the same order. */
static int multi_share(multi_run *m, unsigned slot, unit *u, int root, multi_part_head *h) {
  char *err = m->e->err;
  const size_t errlen = sizeof m->e->err;
  int rc = multi_ranks_bcast(h, sizeof *h, root, err, errlen);
  if (rc || !u->n) return rc;
  const uint64_t n = u->n, cap = m->slot[m->rank];
  if (m->rank == root) {
    /* MPI reads the root's buffers only. */
    rc = multi_ranks_bcast((void *)(uintptr_t)u->out.status, n, root, err, errlen);
    if (!rc && (h->columns & 1u)) rc = multi_ranks_bcast((void *)(uintptr_t)u->out.result, 8 * n, root, err, errlen);
    if (!rc && (h->columns & 2u)) rc = multi_ranks_bcast((void *)(uintptr_t)u->out.seq, 8 * n, root, err, errlen);
    if (!rc && (h->columns & 2u)) rc = multi_ranks_bcast((void *)(uintptr_t)u->out.read_hash, 8 * n, root, err, errlen);
    return rc;
  }
  if (n > cap)
    return engine_fail(m->e, PRSTM_EINVAL, "a part of %llu rows exceeds the ranks' slots of %llu",
                       (unsigned long long)n, (unsigned long long)cap);
  /* Room for the longest part yet, taken as parts come. */
  if (n > m->rx_cap[slot]) {
    free(m->rx_status[slot]);
    free(m->rx_words[slot]);
    m->rx_status[slot] = malloc((size_t)n);
    m->rx_words[slot] = malloc((size_t)n * 3 * sizeof(uint64_t));
    m->rx_cap[slot] = m->rx_status[slot] && m->rx_words[slot] ? n : 0;
    if (!m->rx_cap[slot])
      return engine_fail(m->e, PRSTM_ENOMEM, "cannot keep the outcomes of a part of %llu rows", (unsigned long long)n);
  }
  const uint64_t stride = m->rx_cap[slot];
  uint64_t *words = m->rx_words[slot];
  rc = multi_ranks_bcast(m->rx_status[slot], n, root, err, errlen);
  if (!rc && (h->columns & 1u)) rc = multi_ranks_bcast(words, 8 * n, root, err, errlen);
  if (!rc && (h->columns & 2u)) rc = multi_ranks_bcast(words + stride, 8 * n, root, err, errlen);
  if (!rc && (h->columns & 2u)) rc = multi_ranks_bcast(words + 2 * stride, 8 * n, root, err, errlen);
  if (rc) return rc;
  u->out.status = m->rx_status[slot];
  u->out.result = (h->columns & 1u) ? words : NULL;
  u->out.seq = (h->columns & 2u) ? words + stride : NULL;
  u->out.read_hash = (h->columns & 2u) ? words + 2 * stride : NULL;
  memcpy(u->out.q, h->q, sizeof h->q);
  u->execute_s = h->execute_s;
  return 0;
}

/* A partitioned state: the host's words take what the GPU units wrote
 * since they last did, before the host runs rows on them. */
static int multi_pull_stale(multi_run *m) {
  for (unsigned k = 0; k < m->n; k++) {
    unit *u = &m->u[k];
    if (m->stale_hi[k] <= m->stale_lo[k]) continue;
    int rc = u->ops->state_read(u->e, u->bs, m->e->words, m->stale_lo[k], m->stale_hi[k]);
    if (rc) return engine_fail(m->e, rc, "%s %u: %s", unit_name(u), k, u->e->err);
    m->stale_lo[k] = m->stale_hi[k] = 0;
  }
  return 0;
}

/* A partitioned state: what the host wrote, words [lo, hi), goes to the
 * GPU units that hold them. */
static int multi_push_written(multi_run *m, uint64_t lo, uint64_t hi) {
  for (unsigned k = 0; k < m->n && hi > lo; k++) {
    unit *u = &m->u[k];
    const uint64_t from = lo > u->e->unit_held_lo ? lo : u->e->unit_held_lo;
    const uint64_t to = hi < u->e->unit_held_hi ? hi : u->e->unit_held_hi;
    if (to <= from) continue;
    int rc = u->ops->state_write(u->e, u->bs, m->e->words, from, to);
    if (rc) return engine_fail(m->e, rc, "%s %u: %s", unit_name(u), k, u->e->err);
  }
  return 0;
}

/* Runs the cross part (or the final rows) and keeps it: its rows were
 * staged into m->cross's list, which borrows the stream of unit 0, or of
 * the host's unit where the state is partitioned. */
static int multi_run_on_first(multi_run *m, unit *part, prstm_results *res, uint64_t *decided) {
  multi_part_head head;
  memset(&head, 0, sizeof head);
  int rc = 0;
  if (m->partitioned && m->gpu && (rc = multi_pull_stale(m)) != 0) return rc;
  if (multi_local(m, 0)) {
    unit *u0 = m->partitioned ? &m->host : &m->u[0];
    part->e = u0->e;
    part->ops = u0->ops;
    part->bs = u0->bs;
    part->info = u0->info;
    part->is_gpu = u0->is_gpu;
    part->b = m->b;
    part->fill_parts = 1;
    rc = unit_launch(part);
    if (rc) return engine_fail(m->e, rc, "%s 0: %s", unit_name(part), part->e->err);
    if ((rc = unit_wait(m->e, part)) != 0) return rc;
    /* What the part wrote goes to every other replica. */
    if ((rc = multi_take_span(m, u0)) != 0) return rc;
    span_written_words(m, u0->e->unit_span, &head.lo, &head.hi);
    unit_clear_footprint(u0, m->nlocks);
    multi_head_of(part, &head);
  }
  if (m->ranked && (rc = multi_share(m, m->n, part, 0, &head)) != 0) return rc;
  m->execute_s += part->execute_s;
  rc = unit_keep(m->e, m->b, part, m->seq_base, res, decided, &m->carry, NULL);
  if (rc) return rc;
  m->seq_base += part->out.q[STM_Q_SEQUENCE];
  if (m->partitioned) return m->gpu ? multi_push_written(m, head.lo, head.hi) : 0;
  uint64_t lo[MULTI_MAX_UNITS] = {0}, hi[MULTI_MAX_UNITS] = {0};
  lo[0] = head.lo;
  hi[0] = head.hi;
  if (m->n > 1 && hi[0] > lo[0] && (rc = multi_exchange(m, lo, hi)) != 0) return rc;
  return multi_mirror_take(m, lo, hi, 1);
}

/* A unit strayed out of its range: the round's parts are discarded, the
 * replicas reset, and their rows join the cross part (or wait for a later
 * round where it is full); no row is routed any more. */
static int multi_unroute(multi_run *m, unsigned k, prstm_results *res) {
  int rc = multi_restore(m);
  if (rc) return rc;
  for (unsigned j = 0; j < m->n; j++) {
    unit *u = &m->u[j];
    for (uint64_t i = 0; i < u->n; i++) {
      if (m->cross.n < m->cross.cap)
        m->cross.rows[m->cross.n++] = u->rows[i];
      else if ((rc = unit_rowlist_push(m->e, &m->carry, u->rows[i])) != 0)
        return rc;
    }
    u->n = 0;
  }
  m->routed = 0;
  const size_t used = strlen(res->fallback);
  snprintf(res->fallback + used, sizeof res->fallback - used,
           "%sunit %u's rows touched words outside the range their arguments name, so rows cannot be routed by "
           "their words: every row ran on the first unit",
           used ? "; " : "", k);
  return 0;
}

/* One round: the units' parts at once, checked to have stayed in their
 * ranges, kept in unit order, their writes exchanged; then the cross
 * part on unit 0. */
static int multi_round(multi_run *m, prstm_results *res, uint64_t *decided) {
  ENGINE_RANGE_PUSH("multi parts");
  int rc = multi_run_parts(m);
  ENGINE_RANGE_POP();
  if (rc) return rc;
  multi_part_head head[MULTI_MAX_UNITS];
  memset(head, 0, sizeof head);
  for (unsigned k = 0; k < m->n; k++) {
    unit *u = &m->u[k];
    if (!u->n || !multi_local(m, k)) continue;
    if ((rc = multi_take_span(m, u)) != 0) return rc;
    head[k].strayed = span_strays(u->e->unit_span, m->lock_lo[k], m->lock_lo[k + 1]);
    span_written_words(m, u->e->unit_span, &head[k].lo, &head[k].hi);
    unit_clear_footprint(u, m->nlocks);
    multi_head_of(u, &head[k]);
  }
  for (unsigned k = 0; k < m->n && m->ranked; k++)
    if (m->u[k].n && (rc = multi_share(m, k, &m->u[k], (int)k, &head[k])) != 0) return rc;
  uint64_t lo[MULTI_MAX_UNITS] = {0}, hi[MULTI_MAX_UNITS] = {0};
  int strayed = -1;
  double longest = 0;
  for (unsigned k = 0; k < m->n; k++) {
    if (!m->u[k].n) continue;
    if (head[k].execute_s > longest) longest = head[k].execute_s;
    if (strayed < 0 && head[k].strayed && !m->partitioned) strayed = (int)k;
    lo[k] = head[k].lo;
    hi[k] = head[k].hi;
  }
  m->execute_s += longest;
  *decided = 0;
  if (strayed >= 0 && (rc = multi_unroute(m, (unsigned)strayed, res)) != 0) return rc;
  ENGINE_RANGE_PUSH("multi keep");
  for (unsigned k = 0; k < m->n && !rc; k++) {
    unit *u = &m->u[k];
    if (!u->n) continue;
    uint64_t d = 0;
    rc = unit_keep(m->e, m->b, u, m->seq_base, res, &d, &m->carry, m->partitioned ? &m->away : NULL);
    m->seq_base += u->out.q[STM_Q_SEQUENCE];
    *decided += d;
  }
  ENGINE_RANGE_POP();
  if (rc) return rc;
  if (m->partitioned) {
    /* No replica to bring up to date: the host's words lack what the GPU
     * units wrote until the host next needs them, and the rows the units
     * sent away run on the host after the round's cross rows. */
    for (unsigned k = 0; k < m->n && m->gpu; k++) {
      if (hi[k] <= lo[k]) continue;
      if (m->stale_hi[k] <= m->stale_lo[k]) {
        m->stale_lo[k] = lo[k];
        m->stale_hi[k] = hi[k];
      } else {
        if (lo[k] < m->stale_lo[k]) m->stale_lo[k] = lo[k];
        if (hi[k] > m->stale_hi[k]) m->stale_hi[k] = hi[k];
      }
    }
    if (m->away.n) {
      if ((rc = unit_reserve_rows(m->e, &m->cross, m->cross.n + m->away.n)) != 0) return rc;
      memcpy(m->cross.rows + m->cross.n, m->away.row, (size_t)m->away.n * sizeof *m->away.row);
      m->cross.n += m->away.n;
      res->away_rows += m->away.n;
      m->away.n = 0;
    }
  } else if (strayed < 0) {
    ENGINE_RANGE_PUSH("multi exchange");
    if (m->n > 1) rc = multi_exchange(m, lo, hi);
    if (!rc) rc = multi_mirror_take(m, lo, hi, m->n);
    ENGINE_RANGE_POP();
    if (rc) return rc;
  }
  if (m->cross.n) {
    uint64_t d = 0;
    ENGINE_RANGE_PUSH("multi cross");
    rc = multi_run_on_first(m, &m->cross, res, &d);
    ENGINE_RANGE_POP();
    if (rc) return rc;
    res->cross_rows += d;
    *decided += d;
  }
  return 0;
}

/* A partitioned state needs a lock, and so a word, for every unit's
 * range; with fewer locks than units every unit holds a replica. */
static void multi_check_partition(multi_run *m) {
  if (!m->partitioned || m->nlocks >= m->n) return;
  m->partitioned = 0;
  m->partition_refused = 1;
}

static uint32_t host_cores(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? (uint32_t)cores : 1;
}

/* How many units, and on what: the GPUs asked for (every GPU by default),
 * or where none is usable, units of CPU threads (two by default). */
static int multi_units(multi_run *m, prstm_results *res, uint32_t *cpu_threads) {
  prstm_engine *e = m->e;
  char why[256] = "";
  const unsigned want = e->opt.units;
  if (want > MULTI_MAX_UNITS)
    return engine_fail(e, PRSTM_EINVAL, "backend multi takes at most %u units, not %u", MULTI_MAX_UNITS, want);
  m->gpu = backend_gpu_usable(e->wl, why, sizeof why);
  int rank = 0, size = 0, local_rank = 0, local = 1;
  if (multi_ranks_world(&rank, &size, &local_rank, &local)) {
    /* Started by mpirun: each process is a unit, the GPU of its place on
     * its host where every host has a GPU for each of its ranks, else a
     * set of CPU threads sharing the host's cores with the other ranks
     * there. All ranks take the same kind, or their exchanges would not
     * meet. */
    if (size > (int)MULTI_MAX_UNITS)
      return engine_fail(e, PRSTM_EINVAL, "backend multi takes at most %u ranks, and mpirun started %d",
                         MULTI_MAX_UNITS, size);
    if (want && want != (unsigned)size)
      return engine_fail(e, PRSTM_EINVAL, "mpirun started %d ranks, and the options ask for %u units", size, want);
    if (m->partitioned)
      return engine_fail(e, PRSTM_EINVAL,
                         "a partitioned state runs in one process (the units of one host); ranks that mpirun "
                         "starts each hold a replica: leave partition_state off");
    m->ranked = 1;
    m->rank = rank;
    m->n = (unsigned)size;
#ifdef PRSTM_HAVE_CUDA
    if (m->gpu && !multi_link_available()) {
      m->gpu = 0;
      snprintf(why, sizeof why,
               "this build of prstm has no NCCL, which units on several GPUs exchange their words through");
    } else if (m->gpu && backend_gpu_count() < local) {
      m->gpu = 0;
      snprintf(why, sizeof why, "mpirun started %d ranks on a host with %d GPU%s", local, backend_gpu_count(),
               backend_gpu_count() == 1 ? "" : "s");
    }
#endif
    int all = m->gpu;
    int rc = multi_ranks_all(&all, e->err, sizeof e->err);
    if (rc) return rc;
    if (m->gpu && !all) snprintf(why, sizeof why, "another rank's host has fewer GPUs than ranks, or none");
    m->gpu = all;
    if (m->gpu) {
      m->rank_device = local_rank;
      *cpu_threads = 0;
      return 0;
    }
    const uint32_t cores = host_cores() / (uint32_t)(local > 0 ? local : 1);
    *cpu_threads = e->opt.threads ? e->opt.threads : cores ? cores : 1;
    snprintf(res->fallback, sizeof res->fallback, "%s: the units run on CPU threads, one rank each", why);
    return 0;
  }
#ifdef PRSTM_HAVE_CUDA
  if (m->gpu) {
    const int count = backend_gpu_count();
    m->n = want ? want : count < (int)MULTI_MAX_UNITS ? (unsigned)count : MULTI_MAX_UNITS;
    /* Decided before NCCL is asked for: replicas exchange through it. */
    multi_check_partition(m);
    if ((int)m->n > count) {
      /* More units than GPUs: the units are CPU threads, as where there is
       * no GPU, and the run says so, rather than failing on a smaller host
       * (a run made for four GPUs on a machine with one). */
      m->gpu = 0;
      snprintf(why, sizeof why, "%u units were asked for, and this host has %d GPU%s", m->n, count,
               count == 1 ? "" : "s");
    } else if (m->n == 1 || m->partitioned || multi_link_available()) {
      *cpu_threads = 0;
      return 0;
    } else {
      /* Several GPUs exchange their words through NCCL alone. */
      m->gpu = 0;
      snprintf(why, sizeof why,
               "this build of prstm has no NCCL, which units on several GPUs exchange their words through");
    }
  }
#endif
  m->n = want ? want : 2;
  const uint32_t threads = e->opt.threads ? e->opt.threads : host_cores();
  *cpu_threads = threads / m->n ? threads / m->n : 1;
  snprintf(res->fallback, sizeof res->fallback, "%s: the units run on CPU threads", why);
  return 0;
}

/* Ranks: every rank must hold the same batch, state and options, or their
 * plans and broadcasts would differ. Each compares a fingerprint of its
 * own (sizes, options, and a sample of rows and words) with rank 0's and
 * says whether it matches; any mismatch fails every rank alike. */
static uint64_t multi_mix(uint64_t h, uint64_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

static int multi_ranks_agree(multi_run *m) {
  const prstm_engine *e = m->e;
  const prstm_batch *b = m->b;
  enum { SAMPLE = 4096 };
  uint64_t rows = 0, words = 0;
  const uint64_t row_step = b->n / SAMPLE + 1, word_step = e->nwords / SAMPLE + 1;
  for (uint64_t r = 0; r < b->n; r += row_step) {
    rows = multi_mix(rows, b->type[r]);
    for (uint32_t c = 0; c < b->ncols; c++) rows = multi_mix(rows, txtable_get(b, c, r));
  }
  for (uint64_t w = 0; w < e->nwords; w += word_step) words = multi_mix(words, e->words[w]);
  const uint64_t mine[8] = {
      b->n, b->ncols, e->nwords, e->opt.lock_coverage, (uint64_t)e->opt.semantic, (uint64_t)e->opt.verify, rows, words};
  uint64_t first[8];
  memcpy(first, mine, sizeof first);
  char *err = m->e->err;
  const size_t errlen = sizeof m->e->err;
  int rc = multi_ranks_bcast(first, sizeof first, 0, err, errlen);
  uint64_t all = 1;
  for (unsigned k = 0; k < m->n && !rc; k++) {
    uint64_t same = memcmp(first, mine, sizeof mine) == 0;
    rc = multi_ranks_bcast(&same, sizeof same, (int)k, err, errlen);
    all &= same;
  }
  if (rc) return rc;
  if (!all)
    return engine_fail(m->e, PRSTM_EINVAL,
                       "the ranks hold different batches, states or options: every rank must load the same config "
                       "and files");
  return 0;
}

/* Opens the units this process runs (their replicas, streams and staging,
 * sized to each unit's share of the batch), the GPUs' link, and the cross
 * part's room; *round_rows_out: the rows a round hands out. */
static int multi_open(multi_run *m, uint32_t cpu_threads, uint64_t *round_rows_out) {
  prstm_engine *e = m->e;
  prstm_batch *b = m->b;
  int rc = 0;
  for (unsigned k = 0; k <= m->n; k++) m->lock_lo[k] = m->nlocks * k / m->n;
  const uint64_t want_rows = b->n ? b->n : 1;
  /* A GPU's unit holds its share of the batch (its slots twice that), so
   * that after the probe one round takes the rest: each round is a kernel
   * whose fixed costs show on short parts. */
  const uint64_t share = want_rows / m->n + 1;
  /* The units' ranges of locks are contiguous, so each keeps the span of
   * its footprint rather than a mark per lock. */
  const unit_shape shape = {
      b, m->v, m->results, m->nlocks, want_rows, share > PRSTM_POLICY_STREAM_MAX_UNIT_ROWS ? share : 0, 1};
  int devices[MULTI_MAX_UNITS];
  const uint64_t cov = e->opt.lock_coverage;
  for (unsigned k = 0; k < m->n; k++) {
    devices[k] = m->ranked ? m->rank_device : (int)k;
    if (!multi_local(m, k)) continue;
    /* A partitioned unit holds the words under its locks alone. */
    uint64_t held_lo = 0, held_hi = 0;
    if (m->partitioned) {
      held_lo = m->lock_lo[k] * cov < e->nwords ? m->lock_lo[k] * cov : e->nwords;
      held_hi = m->lock_lo[k + 1] * cov < e->nwords ? m->lock_lo[k + 1] * cov : e->nwords;
      if (held_hi <= held_lo)
        return engine_fail(e, PRSTM_EINVAL, "a state of %llu words is too small to partition among %u units",
                           (unsigned long long)e->nwords, m->n);
    }
    rc = unit_open(e, &m->u[k], &shape, m->gpu ? PRSTM_BACKEND_GPU : PRSTM_BACKEND_CPU, cpu_threads, devices[k],
                   held_lo, held_hi);
    if (rc) return rc;
    m->u[k].fill_parts = 1;
    m->replica[k] = m->gpu ? m->u[k].ops->state_device(m->u[k].bs) : m->u[k].e->words;
  }
  /* Each unit's part holds its slots' rows; ranks take the fewest any
   * rank's unit holds for all, so that every rank plans the same parts. */
  uint64_t rank_slots = m->ranked ? multi_home(m)->info.slot_rows : 0;
  if (m->ranked && (rc = multi_ranks_min(&rank_slots, e->err, sizeof e->err)) != 0) return rc;
  for (unsigned k = 0; k < m->n; k++) {
    m->slot[k] = m->ranked ? rank_slots : m->u[k].info.slot_rows;
    /* No part is longer than the batch (a CPU's slots are twice it). */
    if (m->slot[k] > want_rows) m->slot[k] = want_rows;
  }
  /* The host's unit runs on every core (the units are idle meanwhile), on
   * the run's own words; engine.threads counts GPU threads where the units
   * are GPUs. */
  if (m->partitioned &&
      (rc = unit_open(e, &m->host, &shape, PRSTM_BACKEND_CPU, m->gpu ? 0 : e->opt.threads, -1, 0, e->nwords)) != 0)
    return rc;
#ifdef PRSTM_HAVE_CUDA
  /* A partitioned state has no replicas to exchange between GPUs. */
  if (m->gpu && m->n > 1 && !m->partitioned) {
    rc = m->ranked ? multi_link_open_rank(&m->link, m->rank_device, m->rank, m->n, e->err, sizeof e->err)
                   : multi_link_open(&m->link, devices, m->n, e->err, sizeof e->err);
    if (rc) return rc;
  }
#endif
  /* A round fills every unit's slots, and the cross rows may fill unit 0's
   * too. */
  uint64_t round_rows = 0;
  for (unsigned k = 0; k < m->n; k++) {
    unit *u = &m->u[k];
    round_rows += m->slot[k];
    if ((rc = unit_reserve_rows(e, u, m->slot[k])) != 0) return rc;
    if (!multi_local(m, k)) continue;
    /* A GPU's staging grows to its share of the batch now, while nothing
     * runs: grown part by part, its pinned buffers were taken again in the
     * rounds. */
    backend_unit whole;
    backend_staging st;
    memset(&whole, 0, sizeof whole);
    uint64_t expect = share + share / PRSTM_POLICY_MULTI_SLOT_SPARE_PARTS;
    if (expect > u->info.slot_rows) expect = u->info.slot_rows;
    whole.n = whole.staged = whole.carried = expect;
    whole.results = b->has_read_only;
    if (u->is_gpu && (rc = u->ops->unit_reserve(u->e, u->bs, 0, &whole, &st)) != 0)
      return engine_fail(e, rc, "%s %u: %s", unit_name(u), k, u->e->err);
  }
  /* Rows rarely split evenly: a round leaves each unit an eighth of its
   * slots to spare, so that planning seldom falls back to one thread. */
  round_rows -= round_rows / PRSTM_POLICY_MULTI_SLOT_SPARE_PARTS;
  *round_rows_out = round_rows;
  return unit_reserve_rows(e, &m->cross, m->slot[0]);
}

static int multi_run_rounds(multi_run *m, prstm_results *res) {
  prstm_engine *e = m->e;
  prstm_batch *b = m->b;
  uint32_t cpu_threads = 0;
  int rc = multi_units(m, res, &cpu_threads);
  if (!rc && m->ranked) rc = multi_ranks_agree(m);
  if (rc) return rc;
  multi_check_partition(m);
  if (m->partition_refused) {
    const size_t used = strlen(res->fallback);
    snprintf(res->fallback + used, sizeof res->fallback - used,
             "%sthe state has %llu locks, fewer than the %u units: every unit holds a replica of it", used ? "; " : "",
             (unsigned long long)m->nlocks, m->n);
  }
  /* Replicas are reset from the mirror where a unit strays out of its
   * range; a partitioned unit cannot (it sends such rows away). */
  if (!m->partitioned) {
    m->mirror = malloc((size_t)(e->nwords ? e->nwords : 1) * sizeof *m->mirror);
    if (!m->mirror)
      return engine_fail(e, PRSTM_ENOMEM, "cannot keep a mirror of %llu words", (unsigned long long)e->nwords);
    memcpy(m->mirror, e->words, (size_t)e->nwords * sizeof *m->mirror);
  }
#ifdef PRSTM_HAVE_CUDA
  if (m->gpu) m->caller_device = backend_gpu_current();
#endif
  uint64_t round_rows = 0;
  ENGINE_RANGE_PUSH("multi open");
  rc = multi_open(m, cpu_threads, &round_rows);
  ENGINE_RANGE_POP();
  if (rc) return rc;
  /* The first round probes whether the rows stay in their units' ranges. */
  uint64_t first_round = b->n / PRSTM_POLICY_HETERO_FIRST_ROUND_PARTS;
  if (first_round < PRSTM_POLICY_HETERO_FIRST_ROUND_ROWS) first_round = PRSTM_POLICY_HETERO_FIRST_ROUND_ROWS;
  if (first_round > round_rows) first_round = round_rows;
  const double t0 = engine_now();
  unsigned rounds_after_new = 0;
  uint64_t decided_last = 1;
  while (m->next_new < b->n ||
         (m->carry.n && decided_last && rounds_after_new++ < PRSTM_POLICY_HETERO_ROUNDS_AFTER_NEW)) {
    ENGINE_RANGE_PUSH("multi plan");
    rc = multi_plan(m, res->rounds ? round_rows : first_round);
    ENGINE_RANGE_POP();
    if (!rc) rc = multi_round(m, res, &decided_last);
    if (rc) return rc;
    res->rounds++;
  }
  /* Every row was handed out: what is still pending runs on unit 0 to the
   * end, where a row that nothing funds is abandoned. Where more rows are
   * pending than its slots hold, they first pass through it in parts that
   * abandon nothing, again while a pass decides any: a part abandons only
   * what nothing in its own part funds, so the final parts come once no
   * pending row can commit. */
  /* The host's unit takes every row at once. */
  const uint64_t last_slot = m->partitioned ? UINT64_MAX : m->slot[0];
  int final = m->carry.n <= last_slot;
  while (m->carry.n) {
    uint64_t left = m->carry.n, decided = 0;
    while (left) {
      unit *part = &m->cross;
      const uint64_t n = left < last_slot ? left : last_slot;
      if ((rc = unit_reserve_rows(e, part, n)) != 0) return rc;
      memcpy(part->rows, m->carry.row, (size_t)n * sizeof *part->rows);
      memmove(m->carry.row, m->carry.row + n, (size_t)(m->carry.n - n) * sizeof *m->carry.row);
      m->carry.n -= n;
      left -= n;
      part->n = n;
      part->final = final;
      uint64_t d = 0;
      rc = multi_run_on_first(m, part, res, &d);
      part->final = 0;
      if (rc) return rc;
      res->cross_rows += d;
      decided += d;
      res->rounds++;
    }
    if (!decided) final = 1;
  }
  /* Execution is the units' own: the longest part of each round (they run
   * at once) and the cross parts; everything else (planning, staging,
   * copies, outcomes, exchanges) is the run's transfer time. */
  res->execute_s = m->execute_s;
  res->transfer_s = engine_now() - t0 - m->execute_s;
  if (res->transfer_s < 0) res->transfer_s = 0;
  for (unsigned k = 0; k < m->n; k++) {
    unit *u = &m->u[k];
    /* A rank adds every rank's counts, each broadcast by its own. */
    uint64_t counts[3] = {0, 0, 0};
    if (multi_local(m, k)) {
      rc = u->ops->stream_finish(u->e, u->bs, &counts[0], &counts[1], &counts[2]);
      if (rc) return engine_fail(e, rc, "%s %u: %s", unit_name(u), k, u->e->err);
    }
    if (m->ranked && (rc = multi_ranks_bcast(counts, sizeof counts, (int)k, e->err, sizeof e->err)) != 0) return rc;
    res->aborts += counts[0];
    res->postponements += counts[1];
    res->sweeps += counts[2];
  }
  if (m->partitioned) {
    /* Each GPU unit read its range back into the run's words as it
     * finished; the host's and the CPU units' ran on them in place. */
    uint64_t counts[3] = {0, 0, 0};
    rc = m->host.ops->stream_finish(m->host.e, m->host.bs, &counts[0], &counts[1], &counts[2]);
    if (rc) return engine_fail(e, rc, "%s: %s", unit_name(&m->host), m->host.e->err);
    res->aborts += counts[0];
    res->postponements += counts[1];
    res->sweeps += counts[2];
  } else {
    memcpy(e->words, multi_home(m)->e->words, (size_t)e->nwords * sizeof *e->words);
  }
  e->last_run_sequences = m->seq_base;
  res->backend = PRSTM_BACKEND_MULTI;
  res->units = m->n;
  res->state_partitioned = (uint32_t)m->partitioned;
  res->threads = 0;
  res->gpu_bytes = 0;
  for (unsigned k = 0; k < m->n; k++) {
    const unit *u = multi_local(m, k) ? &m->u[k] : multi_home(m);
    res->threads += u->info.threads;
    res->gpu_bytes += u->info.gpu_bytes;
  }
  snprintf(res->device, sizeof res->device, "%u %s x %.100s", m->n, m->ranked ? "ranks" : "units",
           multi_home(m)->info.device);
  return 0;
}

int engine_run_multi(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res) {
  multi_run *m = calloc(1, sizeof *m);
  if (!m) return engine_fail(e, PRSTM_ENOMEM, "cannot plan a multi-unit run");
  m->e = e;
  m->b = b;
  m->v = v;
  m->nlocks = (e->nwords + e->opt.lock_coverage - 1) / e->opt.lock_coverage;
  if (m->nlocks == 0) m->nlocks = 1;
  m->routed = 1;
  m->partitioned = e->opt.partition_state;
  for (unsigned t = 0; t < e->wl->ntypes; t++)
    if (e->wl->types[t].read_only) m->results = 1;
  int rc = multi_run_rounds(m, res);
  ENGINE_RANGE_PUSH("multi close");
  multi_link_close(m->link);
  for (unsigned k = 0; k < m->n; k++) unit_close(&m->u[k]);
  unit_close(&m->host);
  ENGINE_RANGE_POP();
#ifdef PRSTM_HAVE_CUDA
  if (m->gpu) backend_gpu_make_current(m->caller_device);
#endif
  free(m->cross.rows);
  free(m->carry.row);
  free(m->away.row);
  free(m->cand);
  free(m->owner);
  free(m->mirror);
  for (unsigned k = 0; k <= MULTI_MAX_UNITS; k++) {
    free(m->rx_status[k]);
    free(m->rx_words[k]);
  }
  free(m);
  return rc;
}
