/* contention.c: how hot a batch's words are, from a sample of its address arguments, and how many transactions are worth running at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "engine_internal.h"
#include "parallel.h"

/* Sorts the sample's words in place, tmp holding as many: a least
 * significant digit first radix sort, 11 bits a pass (its counts stay in
 * L1), that skips the digits in which every word agrees (word addresses
 * use their low bits and the mark its top bit). qsort took 26 ms on an
 * H200's host for the 164,000 words of a YCSB batch's sample, longer than
 * that batch's kernel. */
#define CONTENTION_DIGIT_BITS 11u
static void contention_sort_words(uint64_t *words, uint64_t *tmp, uint64_t m) {
  uint64_t all_or = 0, all_and = ~0ull;
  for (uint64_t i = 0; i < m; i++) {
    all_or |= words[i];
    all_and &= words[i];
  }
  const uint64_t varying = all_or ^ all_and;
  uint64_t *src = words, *dst = tmp;
  for (unsigned shift = 0; shift < 64; shift += CONTENTION_DIGIT_BITS) {
    const uint64_t mask = (1u << CONTENTION_DIGIT_BITS) - 1u;
    if (((varying >> shift) & mask) == 0) continue;
    uint32_t count[(1u << CONTENTION_DIGIT_BITS) + 1] = {0};
    for (uint64_t i = 0; i < m; i++) count[((src[i] >> shift) & mask) + 1]++;
    for (unsigned d = 0; d < (1u << CONTENTION_DIGIT_BITS); d++) count[d + 1] += count[d];
    for (uint64_t i = 0; i < m; i++) dst[count[(src[i] >> shift) & mask]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != words) memcpy(words, src, (size_t)m * sizeof *words);
}

/* The address words of row r: its address arguments, and an address list's
 * count column followed by that many addresses. Returns how many it wrote
 * to out (at most cap). */
static unsigned row_addresses(const prstm_type_desc *d, const prstm_batch *b, uint64_t r, uint64_t *out, unsigned cap) {
  unsigned m = 0, col = 0;
  for (unsigned a = 0; a < d->nargs && col < b->ncols; a++, col++) {
    const uint64_t v = txtable_get(b, col, r);
    if (d->args[a].kind == PRSTM_ARG_ADDRESS) {
      if (m < cap) out[m++] = v;
    } else if (d->args[a].kind == PRSTM_ARG_ADDRESS_LIST) {
      for (uint64_t k = 0; k < v && col + 1 < b->ncols; k++) {
        col++;
        if (m < cap) out[m++] = txtable_get(b, col, r);
      }
    }
  }
  return m;
}

/* engine_row_words with the hook's marks kept. */
static unsigned row_words_marked(const prstm_engine *e, const prstm_batch *b, uint64_t r, uint64_t *out, unsigned cap) {
  unsigned k = e->wl->row_words ? e->wl->row_words(e, b, r, out, cap) : 0;
  if (k > cap) k = cap;
  return k ? k : row_addresses(&e->wl->types[b->type[r]], b, r, out, cap);
}

/* The sample's words of row r: those it meets others on, the words it only
 * adds to left out. */
static unsigned row_words_met(const prstm_engine *e, const prstm_batch *b, uint64_t r, uint64_t *out, unsigned cap) {
  const unsigned k = row_words_marked(e, b, r, out, cap);
  unsigned m = 0;
  for (unsigned i = 0; i < k; i++)
    if (!(out[i] & PRSTM_ROW_WORD_ADD)) out[m++] = out[i];
  return m;
}

unsigned engine_row_words(const prstm_engine *e, const prstm_batch *b, uint64_t r, uint64_t *out, unsigned cap) {
  const unsigned k = row_words_marked(e, b, r, out, cap);
  for (unsigned i = 0; i < k; i++) out[i] &= ~(PRSTM_ROW_WORD_AT_COMMIT | PRSTM_ROW_WORD_ADD);
  return k;
}

/* Runs of consecutive rows spread over the whole batch: generated batches
 * are random throughout, but a loaded one may have its hot rows together.
 * Rows taken one by one far apart cost a cache miss in every column of
 * each; a run reads each column's stretch in order (7 of the 10 ms a
 * 12-column YCSB batch's sample took on an H200's host). A batch of more
 * rows than the sample has more than PRSTM_POLICY_CONTENTION_SAMPLE_RUN rows
 * between the starts of two runs, so runs never overlap. */
uint64_t engine_contention_sample_row(uint64_t n, uint64_t rows, uint64_t i) {
  if (rows >= n) return i;
  const uint64_t run = PRSTM_POLICY_CONTENTION_SAMPLE_RUN, runs = (rows + run - 1) / run;
  return (uint64_t)((double)(i / run) * (double)n / (double)runs) + i % run;
}

/* The sample is gathered, grouped and counted on several cores: its words
 * are spread over CONTENTION_BUCKETS buckets by a hash of the whole word,
 * so that equal words share a bucket, and each bucket is sorted and its
 * runs of equal words counted on its own. The counts are integers, summed
 * in any order to the same totals, so the estimate is the same on any
 * number of cores. On one core a YCSB batch's sample of 164,000 words took
 * 2.5 to 4.7 ms on an H200's host (warm), about as long as that batch's
 * kernels. Each of the three steps starts its threads anew, so at most 8
 * parts (2,048 rows each): 8 took 1.3 to 2.4 ms there, 16 no less. */
#define CONTENTION_BUCKETS 64u
#define CONTENTION_MIN_ROWS_PER_PART 2048u

/* What a bucket's runs of equal words add to the estimate. */
typedef struct contention_counts {
  uint64_t equal_pairs, abort_pairs, abort_words, hottest, hottest_abort;
} contention_counts;

typedef struct contention_job {
  const prstm_engine *e;
  const prstm_batch *b;
  uint64_t rows, per_row;
  uint64_t *gathered; /* part p's words from gathered[from * per_row], as gathered */
  uint64_t *grouped;  /* every word again, bucket by bucket */
  uint64_t kept[ENGINE_MAX_PARTS];
  /* Part p's words in bucket k, then where the first of them goes. */
  uint64_t in_bucket[ENGINE_MAX_PARTS][CONTENTION_BUCKETS];
  uint64_t bucket_at[CONTENTION_BUCKETS + 1];
  contention_counts counts[CONTENTION_BUCKETS];
} contention_job;

static unsigned contention_bucket(uint64_t word) {
  return (unsigned)((word * 0x9E3779B97F4A7C15ull) >> 58); /* the top 6 bits: 64 buckets */
}

static void contention_gather(void *arg, unsigned part, uint64_t from, uint64_t to) {
  contention_job *j = arg;
  uint64_t *out = j->gathered + from * j->per_row, m = 0;
  for (uint64_t i = from; i < to; i++)
    m += row_words_met(j->e, j->b, engine_contention_sample_row(j->b->n, j->rows, i), out + m, (unsigned)j->per_row);
  uint64_t *count = j->in_bucket[part];
  memset(count, 0, sizeof j->in_bucket[part]);
  for (uint64_t i = 0; i < m; i++) count[contention_bucket(out[i])]++;
  j->kept[part] = m;
}

static void contention_group(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)to;
  contention_job *j = arg;
  const uint64_t *in = j->gathered + from * j->per_row;
  uint64_t *at = j->in_bucket[part];
  for (uint64_t i = 0; i < j->kept[part]; i++) j->grouped[at[contention_bucket(in[i])]++] = in[i];
}

/* Sorts buckets [from, to), each with the gathered words' room as its
 * scratch, and counts their runs of equal words. */
static void contention_count(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  contention_job *j = arg;
  for (uint64_t k = from; k < to; k++) {
    const uint64_t lo = j->bucket_at[k], hi = j->bucket_at[k + 1];
    uint64_t *words = j->grouped + lo;
    contention_counts *c = &j->counts[k];
    memset(c, 0, sizeof *c);
    contention_sort_words(words, j->gathered + lo, hi - lo);
    for (uint64_t i = 0; i < hi - lo;) {
      uint64_t r = i;
      while (r < hi - lo && words[r] == words[i]) r++;
      const uint64_t run = r - i, pairs = run * (run - 1);
      c->equal_pairs += pairs;
      if (!(words[i] & PRSTM_ROW_WORD_AT_COMMIT)) {
        c->abort_pairs += pairs;
        c->abort_words += run;
        if (run > c->hottest_abort) c->hottest_abort = run;
      }
      if (run > c->hottest) c->hottest = run;
      i = r;
    }
  }
}

void engine_contention_sample(const prstm_engine *e, const prstm_batch *b, engine_contention *c) {
  memset(c, 0, sizeof *c);
  const uint64_t want = PRSTM_POLICY_CONTENTION_SAMPLE_ROWS, per_row = 64;
  const uint64_t rows = b->n < want ? b->n : want;
  if (rows == 0) return;
  contention_job *j = calloc(1, sizeof *j);
  /* The gathered words, then as many for the grouped ones. */
  uint64_t *words = malloc((size_t)(2 * rows * per_row) * sizeof *words);
  if (!j || !words) {
    free(j);
    free(words);
    return;
  }
  j->e = e;
  j->b = b;
  j->rows = rows;
  j->per_row = per_row;
  j->gathered = words;
  j->grouped = words + rows * per_row;
  const unsigned parts = engine_parallel_parts(rows, CONTENTION_MIN_ROWS_PER_PART);
  engine_parallel_for(rows, parts, contention_gather, j);
  /* Bucket k's words go to [bucket_at[k], bucket_at[k + 1]), part by part. */
  uint64_t m = 0;
  for (unsigned k = 0; k < CONTENTION_BUCKETS; k++) {
    j->bucket_at[k] = m;
    for (unsigned p = 0; p < parts; p++) {
      const uint64_t count = j->in_bucket[p][k];
      j->in_bucket[p][k] = m;
      m += count;
    }
  }
  j->bucket_at[CONTENTION_BUCKETS] = m;
  c->batch_rows = b->n;
  c->rows = rows;
  c->words = m;
  if (m >= 2) {
    engine_parallel_for(rows, parts, contention_group, j);
    engine_parallel_for(CONTENTION_BUCKETS, parts, contention_count, j);
    /* A marked word sorts apart from the same address unmarked: a row that
     * reads a counter and another that takes a ticket on it do not count
     * as a pair. */
    contention_counts all = {0, 0, 0, 0, 0};
    for (unsigned k = 0; k < CONTENTION_BUCKETS; k++) {
      const contention_counts *t = &j->counts[k];
      all.equal_pairs += t->equal_pairs;
      all.abort_pairs += t->abort_pairs;
      all.abort_words += t->abort_words;
      if (t->hottest > all.hottest) all.hottest = t->hottest;
      if (t->hottest_abort > all.hottest_abort) all.hottest_abort = t->hottest_abort;
    }
    c->hottest_count = all.hottest;
    c->abort_words = all.abort_words;
    c->hottest_abort_count = all.hottest_abort;
    c->q = (double)all.equal_pairs / ((double)m * (double)(m - 1));
    if (all.abort_words >= 2)
      c->abort_q = (double)all.abort_pairs / ((double)all.abort_words * (double)(all.abort_words - 1));
    c->known = 1;
  }
  free(words);
  free(j);
}

/* A batch of fewer rows than threads has only its rows in flight. */
static double contention_inflight(const engine_contention *c, uint32_t inflight) {
  return (double)(c->batch_rows < inflight ? c->batch_rows : inflight);
}

/* Conflicts a transaction meets over `words` sampled words whose chance of
 * a pair is q, and transactions at once on a word sampled `count` times:
 * over every word, or over those met before commit alone. */
static double contention_conflicts_over(const engine_contention *c, uint64_t words, double q, uint32_t inflight) {
  if (!c->known || contention_inflight(c, inflight) < 2) return 0.0;
  const double s = (double)words / (double)c->rows;
  return s * s * (contention_inflight(c, inflight) - 1) * q;
}

static double contention_queue(const engine_contention *c, uint64_t count, uint32_t inflight) {
  if (!c->known) return 0.0;
  return (double)count / (double)c->rows * contention_inflight(c, inflight);
}

double engine_contention_conflicts(const engine_contention *c, uint32_t inflight) {
  return contention_conflicts_over(c, c->words, c->q, inflight);
}

double engine_contention_hottest_inflight(const engine_contention *c, uint32_t inflight) {
  return contention_queue(c, c->hottest_count, inflight);
}

double engine_contention_abort_conflicts(const engine_contention *c, uint32_t inflight) {
  return contention_conflicts_over(c, c->abort_words, c->abort_q, inflight);
}

double engine_contention_hottest_abort_inflight(const engine_contention *c, uint32_t inflight) {
  return contention_queue(c, c->hottest_abort_count, inflight);
}

uint32_t engine_contention_inflight(const engine_contention *c, uint32_t most) {
  /* Only words met before commit abort anyone in flight. */
  if (!c->known || c->abort_q <= 0) return most;
  const double s = (double)c->abort_words / (double)c->rows;
  const double t = PRSTM_POLICY_INFLIGHT_CONFLICTS / (s * s * c->abort_q) + 1.0;
  if (t >= (double)most) return most;
  uint32_t warps = (uint32_t)(t / 32.0) + 1;
  uint32_t threads = warps * 32;
  return threads < most ? threads : most;
}

int engine_auto_prefers_cpu(const prstm_engine *e, const prstm_batch *b, char *why, size_t whylen) {
  engine_contention hot;
  engine_contention_sample(e, b, &hot);
  return engine_auto_prefers_cpu_sampled(e, b, &hot, why, whylen);
}

int engine_auto_prefers_cpu_sampled(const prstm_engine *e, const prstm_batch *b, const engine_contention *hot,
                                    char *why, size_t whylen) {
  if (!hot->known) return 0;
  /* The GPU's threads: those asked for, else about a full GPU's default. */
  const uint32_t gpu = e->opt.threads ? e->opt.threads : PRSTM_POLICY_AUTO_GPU_INFLIGHT;
  cmp_delta_plan plan;
  if (engine_delta_want(e, b, PRSTM_BACKEND_GPU, gpu, hot, &plan)) return 0; /* the GPU's delta path */
  /* Words met only at commit do not count: TPC-C's NewOrders, which meet
   * on their districts' tickets alone, ran 2.4 to 3.1 times faster on the
   * GPU than on the CPU backend at 4 warehouses and 18 to 19 times from 16
   * to 64 (docs/OLTP.md). At 1 warehouse the two are close: the CPU backend
   * led by 1.1 times in the oltp experiment's 100k rows, the GPU by 1.4 to
   * 2.2 times in runs of 200k rows. */
  const double conflicts = engine_contention_abort_conflicts(hot, gpu),
               queue = engine_contention_hottest_abort_inflight(hot, gpu);
  if (conflicts < PRSTM_POLICY_AUTO_CPU_CONFLICTS && queue < PRSTM_POLICY_AUTO_CPU_HOT_WORD_QUEUE) return 0;
  snprintf(why, whylen,
           "the batch's words are hot for a GPU's threads (%.3g conflicts a transaction, %.3g transactions at once on "
           "its hottest word) and it cannot take the delta path: the CPU backend runs such batches faster",
           conflicts, queue);
  return 1;
}
