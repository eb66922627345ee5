/* workload_util.h: what the built-in workloads' host sides share: the GPU hooks of a variant, the seeded random stream, the generators' mix and semantic pairs, and the end of a generator. */
#ifndef PRSTM_WORKLOAD_UTIL_H
#define PRSTM_WORKLOAD_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parallel.h"
#include "prstm.h"
#include "txtable.h"

/* A hint that the cache line at p will be read soon, where the compiler
 * has one. */
#if defined(__GNUC__)
#define WL_PREFETCH(p) __builtin_prefetch(p)
#else
#define WL_PREFETCH(p) ((void)(p))
#endif

/* ---- The random stream ----
 *
 * splitmix64: small, fast, and the same stream on every machine for a seed,
 * so that a config's seed gives the same batch and state everywhere. Every
 * draw below must stay exactly as it is: a change of one bit changes every
 * batch that a seed is known to give. */
static inline uint64_t wl_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A draw from 0 to n - 1 by remainder (0 when n is 0). */
static inline uint64_t wl_below(uint64_t *state, uint64_t n) { return n ? wl_rand(state) % n : 0; }

/* A draw from [0, 1), from the top 53 bits of a draw. */
static inline double wl_unit(uint64_t *state) { return (double)(wl_rand(state) >> 11) * (1.0 / 9007199254740992.0); }

/* ---- Zipfian draws ----
 *
 * Ranks 0 .. n - 1 with P(rank k) proportional to 1 / (k + 1)^theta, YCSB's
 * definition of a Zipfian skew (theta 0: uniform; YCSB's default 0.99), for
 * any theta >= 0, 1 included. The first WL_ZIPF_HEAD ranks are drawn
 * exactly, by a search of their cumulative weights; the tail, where the
 * weights change slowly, by inverting the integral of x^-theta from
 * WL_ZIPF_HEAD + 1/2 on (the midpoint rule), so a draw costs a search of the
 * head or a pow, and the table stays small for any n.
 *
 * The head's search starts from a guide: the head's weight cut into as many
 * equal buckets as it has ranks, and for each bucket's lower edge the first
 * rank whose running sum passes it. A draw then searches only the ranks
 * between its bucket's guide and the next one's, a step or two where a
 * search of the whole head took sixteen dependent loads; it finds the same
 * rank, since the rank it looks for always lies between the two. */
#define WL_ZIPF_HEAD 65536u
typedef struct wl_zipf {
  uint64_t n, head;
  double theta, head_sum, total;
  double *cumulative; /* head entries: the weights of ranks 0 .. k, summed */
  uint32_t *guide;    /* head entries: the first rank whose sum passes each bucket's edge */
  double step;        /* the weight of a bucket: head_sum / head */
  /* The tail's inverse, pow(pow(a, 1 - theta) + left * (1 - theta),
   * 1 / (1 - theta)) with a = head + 1/2, takes its first pow and its
   * exponent from here, the same values it would compute each draw. */
  double tail_base, tail_power;
} wl_zipf;

/* The integral of x^-theta from a to b. */
static inline double wl_zipf_integral(double theta, double a, double b) {
  if (theta == 1.0) return log(b / a);
  return (pow(b, 1.0 - theta) - pow(a, 1.0 - theta)) / (1.0 - theta);
}

/* The lower edge of guide bucket b: the one expression both the guide and a
 * draw use, so that they agree on every bucket to the last bit. */
static inline double wl_zipf_edge(const wl_zipf *z, uint64_t b) { return (double)b * z->step; }

/* The head's weights, pow(k + 1, -theta) into cumulative[k], over a part
 * of the ranks: the pow calls are nearly all of the table's cost (2 ms for
 * a full head), and unlike the running sum they need no order. */
typedef struct wl_zipf_weights_job {
  double *weight;
  double theta;
} wl_zipf_weights_job;

static inline void wl_zipf_weights_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  const wl_zipf_weights_job *job = (const wl_zipf_weights_job *)arg;
  (void)part;
  for (uint64_t k = from; k < to; k++) job->weight[k] = pow((double)(k + 1), -job->theta);
}

/* The table for ranks 0 .. n - 1 at skew theta, its weights computed on up
 * to `threads` threads (0: every core); the table is the same for any count. */
static inline int wl_zipf_init(wl_zipf *z, uint64_t n, double theta, unsigned threads) {
  memset(z, 0, sizeof *z);
  z->n = n;
  z->theta = theta;
  z->head = n < WL_ZIPF_HEAD ? n : WL_ZIPF_HEAD;
  z->cumulative = malloc((size_t)z->head * sizeof *z->cumulative);
  z->guide = malloc((size_t)z->head * sizeof *z->guide);
  if (!z->cumulative || !z->guide) {
    free(z->cumulative);
    free(z->guide);
    z->cumulative = NULL;
    z->guide = NULL;
    return PRSTM_ENOMEM;
  }
  wl_zipf_weights_job job = {z->cumulative, theta};
  unsigned parts = engine_parallel_parts(z->head, 4096);
  if (threads && parts > threads) parts = threads;
  engine_parallel_for(z->head, parts ? parts : 1, wl_zipf_weights_part, &job);
  /* The running sum in rank order, as one thread would add it up. */
  double sum = 0;
  for (uint64_t k = 0; k < z->head; k++) z->cumulative[k] = sum += z->cumulative[k];
  z->head_sum = sum;
  z->total = sum + (n > z->head ? wl_zipf_integral(theta, (double)z->head + 0.5, (double)n + 0.5) : 0.0);
  z->step = z->head_sum / (double)z->head;
  uint64_t k = 0;
  for (uint64_t b = 0; b < z->head; b++) {
    const double edge = wl_zipf_edge(z, b);
    while (k < z->head - 1 && !(z->cumulative[k] > edge)) k++;
    z->guide[b] = (uint32_t)k;
  }
  if (theta != 1.0) {
    z->tail_base = pow((double)z->head + 0.5, 1.0 - theta);
    z->tail_power = 1.0 / (1.0 - theta);
  }
  return 0;
}

static inline void wl_zipf_free(wl_zipf *z) {
  free(z->cumulative);
  free(z->guide);
}

static inline uint64_t wl_zipf_draw(const wl_zipf *z, uint64_t *rng) {
  double u = wl_unit(rng) * z->total;
  if (u < z->head_sum) {
    /* u's bucket, by a division that rounding may put one off, then set
     * right against the edges themselves. */
    uint64_t b = (uint64_t)(u / z->step);
    if (b > z->head - 1) b = z->head - 1;
    while (b > 0 && wl_zipf_edge(z, b) > u) b--;
    while (b + 1 < z->head && !(wl_zipf_edge(z, b + 1) > u)) b++;
    /* The first rank whose sum passes u lies in [guide[b], guide[b + 1]]:
     * no rank before guide[b] passes the edge, which u is at least, and
     * guide[b + 1] passes the next edge, which u is below (the head's last
     * rank closes the last bucket). */
    uint64_t lo = z->guide[b], hi = b + 1 < z->head ? z->guide[b + 1] : z->head - 1;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (z->cumulative[mid] > u)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
  /* In the tail: x with the integral from head + 1/2 to x equal to what is
   * left of u; rank x - 1/2 rounded, kept within the tail. */
  double left = u - z->head_sum, a = (double)z->head + 0.5, x;
  if (z->theta == 1.0)
    x = a * exp(left);
  else
    x = pow(z->tail_base + left * (1.0 - z->theta), z->tail_power);
  double rank = floor(x - 0.5);
  if (!(rank >= (double)z->head)) rank = (double)z->head;
  if (rank > (double)(z->n - 1)) rank = (double)(z->n - 1);
  return (uint64_t)rank;
}

/* ---- The mix of a generator ---- */

/* Reads batch.generate.mix, when the config gives one, into weight[0 ..
 * ntypes), which then replaces the workload's default mix: each type of the
 * mix adds its weight to weight[fold[t]] (to weight[t] when fold is NULL),
 * which lets a workload count one type as another. A type the workload lacks,
 * or one at ntypes or beyond, is refused. */
static inline int wl_mix_weights(const prstm_generate_spec *spec, const prstm_batch *batch, double *weight,
                                 unsigned ntypes, const unsigned *fold, char *err, size_t errlen) {
  if (spec->nmix == 0) return 0;
  memset(weight, 0, ntypes * sizeof *weight);
  for (unsigned i = 0; i < spec->nmix; i++) {
    int t = prstm_type_find(prstm_batch_workload(batch), spec->mix_names[i]);
    if (t < 0 || (unsigned)t >= ntypes) {
      snprintf(err, errlen, "mix: unknown transaction type '%s'", spec->mix_names[i]);
      return PRSTM_EUNKNOWN;
    }
    weight[fold ? fold[t] : (unsigned)t] += spec->mix_weights[i];
  }
  return 0;
}

/* Applies batch.generate.read_only when the config gives it (a share from 0
 * to 1): the update types weight[0 .. nupdate) keep their proportions within
 * the rest, and the read-only type, weight[nupdate], gets the share.
 * update_names lists the update types for the message when none has weight. */
static inline int wl_read_only_share(const prstm_generate_spec *spec, double *weight, unsigned nupdate,
                                     const char *update_names, char *err, size_t errlen) {
  if (!(spec->read_only >= 0)) return 0;
  double rest = weight[0];
  for (unsigned t = 1; t < nupdate; t++) rest += weight[t];
  if (rest <= 0 && spec->read_only < 1) {
    snprintf(err, errlen, "read_only %g leaves no update type: give %s a weight in mix", spec->read_only, update_names);
    return PRSTM_ECONFIG;
  }
  for (unsigned t = 0; t < nupdate; t++) weight[t] = rest > 0 ? weight[t] / rest * (1 - spec->read_only) : 0;
  weight[nupdate] = spec->read_only;
  return 0;
}

/* Turns weight[0 .. n) into the running sums wl_pick draws against, and
 * refuses a mix whose weights are all zero. */
static inline int wl_cumulate(const double *weight, double *cumulative, unsigned n, char *err, size_t errlen) {
  for (unsigned t = 0; t < n; t++) cumulative[t] = (t ? cumulative[t - 1] : 0) + weight[t];
  if (!(cumulative[n - 1] > 0)) {
    snprintf(err, errlen, "mix: all weights are zero");
    return PRSTM_ECONFIG;
  }
  return 0;
}

/* Draws index t of the running sums cumulative[0 .. n) with probability
 * weight t / total. */
static inline unsigned wl_pick(uint64_t *rng, const double *cumulative, unsigned n) {
  double u = wl_unit(rng) * cumulative[n - 1];
  unsigned t = 0;
  while (t < n - 1 && u >= cumulative[t]) t++;
  return t;
}

/* ---- Semantic pairs ---- */

/* What wl_pair_slot_partner gives a row that is not part of a pair. */
#define WL_RANDOM_ROW UINT64_MAX

/* ---- Permutations computed row by row ----
 *
 * A pseudo-random permutation pi of [0, n), keyed by a seed: a four-round
 * Feistel network over the smallest even number of bits that covers n,
 * walked until it lands below n (the walk stays on x's cycle, which holds a
 * place below n). pi(x) and its inverse cost a few multiplies each and need
 * no table, so a generator on every core can shuffle its rows or place its
 * pairs with the same result for any thread count. */
typedef struct wl_perm {
  uint64_t n, mask;
  unsigned half_bits;
  uint64_t key[4];
} wl_perm;

static inline void wl_perm_init(wl_perm *p, uint64_t seed, uint64_t n) {
  memset(p, 0, sizeof *p);
  p->n = n;
  unsigned bits = 2;
  while (bits < 64 && (1ull << bits) < n) bits += 2;
  p->half_bits = bits / 2;
  p->mask = (1ull << p->half_bits) - 1;
  uint64_t s = seed ^ 0x7065726d00000000ull; /* "perm" */
  for (int i = 0; i < 4; i++) p->key[i] = wl_rand(&s);
}

static inline uint64_t wl_perm_round(uint64_t x, uint64_t key) {
  x = (x ^ key) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 32);
}

/* One pass of the network over the whole domain, or its inverse. */
static inline uint64_t wl_perm_feistel(const wl_perm *p, uint64_t x, int inverse) {
  uint64_t l = x >> p->half_bits, r = x & p->mask;
  for (int i = 0; i < 4; i++) {
    if (!inverse) {
      const uint64_t t = l ^ (wl_perm_round(r, p->key[i]) & p->mask);
      l = r;
      r = t;
    } else {
      const uint64_t t = r ^ (wl_perm_round(l, p->key[3 - i]) & p->mask);
      r = l;
      l = t;
    }
  }
  return (l << p->half_bits) | r;
}

/* pi(x), for x < n. */
static inline uint64_t wl_perm_at(const wl_perm *p, uint64_t x) {
  do x = wl_perm_feistel(p, x, 0);
  while (x >= p->n);
  return x;
}

/* The inverse of pi at x < n. */
static inline uint64_t wl_perm_inverse(const wl_perm *p, uint64_t x) {
  do x = wl_perm_feistel(p, x, 1);
  while (x >= p->n);
  return x;
}

/* Semantic pairs placed row by row: row r goes to place pi(r), and the rows
 * whose places fall below 2 npairs are the pairs' members, places 2p and
 * 2p + 1 making pair p, so the members are a random set of rows, paired at
 * random, at every distance. Row r's part:
 * WL_RANDOM_ROW, or p << 1 for pair p's earlier member and (p << 1) | 1 for
 * its later one; a member's partner row goes to *partner. */
static inline uint64_t wl_pair_slot_partner(const wl_perm *p, uint64_t npairs, uint64_t r, uint64_t *partner) {
  const uint64_t place = wl_perm_at(p, r);
  if (place >= 2 * npairs) return WL_RANDOM_ROW;
  *partner = wl_perm_inverse(p, place ^ 1);
  return ((place >> 1) << 1) | (r > *partner ? 1u : 0u);
}

/* ---- Semantic pairs found from their places ----
 *
 * wl_pair_slot_partner costs a permutation for every row, though only the 2 npairs
 * rows of pairs have a part, and at a low semantic ratio that permutation
 * was most of a generator's time. A wl_pair_rows instead computes the row
 * at each member's place (pi's inverse, once a member, on every core) and
 * sorts the members by row: wl_pair_rows_slots then gives any range of rows
 * their parts from the members in that range alone. Same parts as
 * wl_pair_slot_partner, for any thread count. It takes 24 bytes a member,
 * so it is used where members are at most a quarter of the rows; elsewhere
 * (and where its memory is refused) parts are computed row by row. */
#define WL_PAIR_BLOCK_ROWS 65536u

typedef struct wl_pair_member {
  uint64_t row, place;
} wl_pair_member;

typedef struct wl_pair_rows {
  const wl_perm *perm;
  uint64_t npairs, nblocks;
  uint64_t *row_of;       /* row_of[q]: the row at place q < 2 npairs; NULL: row by row */
  wl_pair_member *by_row; /* every member, in row order */
  uint64_t *block_start;  /* block b's members: by_row[block_start[b] .. block_start[b + 1]) */
  uint64_t *counts;       /* a part's members in each block, then where it puts them */
  unsigned parts;
} wl_pair_rows;

static void wl_pair_rows_locate(void *arg, unsigned part, uint64_t from, uint64_t to) {
  wl_pair_rows *pr = (wl_pair_rows *)arg;
  uint64_t *count = pr->counts + (uint64_t)part * pr->nblocks;
  for (uint64_t q = from; q < to; q++) {
    const uint64_t r = wl_perm_inverse(pr->perm, q);
    pr->row_of[q] = r;
    count[r / WL_PAIR_BLOCK_ROWS]++;
  }
}

static void wl_pair_rows_group(void *arg, unsigned part, uint64_t from, uint64_t to) {
  wl_pair_rows *pr = (wl_pair_rows *)arg;
  uint64_t *at = pr->counts + (uint64_t)part * pr->nblocks;
  for (uint64_t q = from; q < to; q++) {
    const uint64_t r = pr->row_of[q];
    pr->by_row[at[r / WL_PAIR_BLOCK_ROWS]++] = (wl_pair_member){r, q};
  }
}

/* Sorts blocks [from, to)'s members by row: a block's rows are distinct and
 * span WL_PAIR_BLOCK_ROWS, so a bitmap of them, walked in order, sorts. */
static void wl_pair_rows_sort(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  wl_pair_rows *pr = (wl_pair_rows *)arg;
  uint64_t bits[WL_PAIR_BLOCK_ROWS / 64];
  uint32_t *index = (uint32_t *)malloc(WL_PAIR_BLOCK_ROWS * sizeof *index);
  wl_pair_member *sorted = (wl_pair_member *)malloc(WL_PAIR_BLOCK_ROWS * sizeof *sorted);
  for (uint64_t b = from; b < to; b++) {
    wl_pair_member *m = pr->by_row + pr->block_start[b];
    const uint64_t count = pr->block_start[b + 1] - pr->block_start[b], base = b * WL_PAIR_BLOCK_ROWS;
    if (!index || !sorted) { /* no scratch: an insertion sort, slow but right */
      for (uint64_t i = 1; i < count; i++)
        for (uint64_t j = i; j > 0 && m[j - 1].row > m[j].row; j--) {
          const wl_pair_member t = m[j];
          m[j] = m[j - 1];
          m[j - 1] = t;
        }
      continue;
    }
    memset(bits, 0, sizeof bits);
    for (uint64_t k = 0; k < count; k++) {
      const uint64_t off = m[k].row - base;
      bits[off / 64] |= 1ull << (off % 64);
      index[off] = (uint32_t)k;
    }
    uint64_t out = 0;
    for (uint64_t w = 0; w < WL_PAIR_BLOCK_ROWS / 64; w++)
      for (uint64_t x = bits[w]; x; x &= x - 1) sorted[out++] = m[index[w * 64 + (uint64_t)__builtin_ctzll(x)]];
    memcpy(m, sorted, (size_t)count * sizeof *m);
  }
  free(index);
  free(sorted);
}

static inline void wl_pair_rows_free(wl_pair_rows *pr) {
  free(pr->row_of);
  free(pr->by_row);
  free(pr->block_start);
  free(pr->counts);
  pr->row_of = pr->block_start = pr->counts = NULL;
  pr->by_row = NULL;
}

/* Pairs of the permutation p over n rows, npairs of them, found on
 * `threads` threads (0: every core). Never fails: where this does not pay
 * or has no memory, parts are computed row by row. */
static inline void wl_pair_rows_init(wl_pair_rows *pr, const wl_perm *p, uint64_t npairs, uint64_t n,
                                     unsigned threads) {
  memset(pr, 0, sizeof *pr);
  pr->perm = p;
  pr->npairs = npairs;
  const uint64_t members = 2 * npairs;
  if (members == 0 || members > n / 4) return;
  pr->nblocks = (n + WL_PAIR_BLOCK_ROWS - 1) / WL_PAIR_BLOCK_ROWS;
  /* engine_parallel_for gives part k the same range in both passes. */
  pr->parts = engine_parallel_parts(members, 4096);
  if (threads && pr->parts > threads) pr->parts = threads;
  pr->row_of = (uint64_t *)malloc((size_t)members * sizeof *pr->row_of);
  pr->by_row = (wl_pair_member *)malloc((size_t)members * sizeof *pr->by_row);
  pr->block_start = (uint64_t *)calloc((size_t)pr->nblocks + 1, sizeof *pr->block_start);
  pr->counts = (uint64_t *)calloc((size_t)pr->parts * pr->nblocks, sizeof *pr->counts);
  if (!pr->row_of || !pr->by_row || !pr->block_start || !pr->counts) {
    wl_pair_rows_free(pr);
    return;
  }
  engine_parallel_for(members, pr->parts, wl_pair_rows_locate, pr);
  /* Block by block, each part's members after the earlier parts'. */
  uint64_t at = 0;
  for (uint64_t b = 0; b < pr->nblocks; b++) {
    pr->block_start[b] = at;
    for (unsigned k = 0; k < pr->parts; k++) {
      const uint64_t c = pr->counts[(uint64_t)k * pr->nblocks + b];
      pr->counts[(uint64_t)k * pr->nblocks + b] = at;
      at += c;
    }
  }
  pr->block_start[pr->nblocks] = at;
  engine_parallel_for(members, pr->parts, wl_pair_rows_group, pr);
  unsigned sort_parts = engine_parallel_parts(pr->nblocks, 1);
  if (threads && sort_parts > threads) sort_parts = threads;
  engine_parallel_for(pr->nblocks, sort_parts, wl_pair_rows_sort, pr);
  free(pr->counts);
  pr->counts = NULL;
}

/* The parts of rows [first, first + rows), as wl_pair_slot_partner gives
 * them: slot[k] for row first + k, and partner[k] where it is a member. */
static inline void wl_pair_rows_slots(const wl_pair_rows *pr, uint64_t first, uint64_t rows, uint64_t *slot,
                                      uint64_t *partner) {
  if (!pr->row_of) {
    for (uint64_t k = 0; k < rows; k++)
      slot[k] = pr->npairs ? wl_pair_slot_partner(pr->perm, pr->npairs, first + k, &partner[k]) : WL_RANDOM_ROW;
    return;
  }
  for (uint64_t k = 0; k < rows; k++) slot[k] = WL_RANDOM_ROW;
  /* The first member at or after row `first`. */
  uint64_t lo = 0, hi = 2 * pr->npairs;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (pr->by_row[mid].row < first)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (uint64_t m = lo; m < 2 * pr->npairs && pr->by_row[m].row - first < rows; m++) {
    const uint64_t q = pr->by_row[m].place, k = pr->by_row[m].row - first;
    partner[k] = pr->row_of[q ^ 1];
    slot[k] = ((q >> 1) << 1) | (first + k > partner[k] ? 1u : 0u);
  }
}

/* ---- Generators on every core ----
 *
 * A generated batch is made in blocks of WL_BLOCK_ROWS rows, block b from a
 * stream of its own seeded by wl_block_seed(seed, b): the rows depend on
 * the seed and the row's place alone, so every core count gives the same
 * batch. Block 0 is made first, on the caller's thread, and tells the
 * batch's columns; the batch is then reserved for every row, and each
 * thread makes a run of consecutive blocks straight into its rows, through
 * a window on them (txtable.h): no part to copy, and no second table in
 * memory. A block wider than block 0 (a wider type drawn later) cannot fit
 * a window: the rows are then made again into a part per thread, joined in
 * block order. A value wider than 32 bits in a narrow batch (txtable.h)
 * widens the batch, and the windows are filled again. */
#define WL_BLOCK_ROWS 65536u
#define WL_BLOCK_MAX_THREADS ENGINE_MAX_PARTS

/* Makes rows [first, first + rows) into part, drawing from *rng. */
typedef int (*wl_make_block_fn)(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng);

static inline uint64_t wl_block_seed(uint64_t seed, uint64_t block) {
  uint64_t s = seed ^ ((block + 1) * 0xd1b54a32d192ed03ull);
  return wl_rand(&s);
}

typedef struct wl_block_job {
  wl_make_block_fn make;
  const void *ctx;
  uint64_t seed, n, block_lo, block_hi;
  prstm_batch *part; /* a window on the batch's rows, or a batch of its own */
  int rc;
} wl_block_job;

static void wl_block_worker(wl_block_job *j) {
  for (uint64_t b = j->block_lo; b < j->block_hi && !j->rc; b++) {
    const uint64_t first = b * WL_BLOCK_ROWS;
    const uint64_t rows = j->n - first < WL_BLOCK_ROWS ? j->n - first : WL_BLOCK_ROWS;
    uint64_t rng = wl_block_seed(j->seed, b);
    j->rc = j->make(j->ctx, j->part, first, rows, &rng);
  }
}

static void wl_block_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  wl_block_job *jobs = (wl_block_job *)arg;
  for (uint64_t k = from; k < to; k++) wl_block_worker(&jobs[k]);
}

/* The threads that make nblocks blocks when `threads` are asked (0: every
 * core): at most one a block, and at most WL_BLOCK_MAX_THREADS. */
static inline unsigned wl_block_threads(unsigned threads, uint64_t nblocks) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t n = threads ? threads : (uint64_t)(cores > 0 ? cores : 1);
  if (n > nblocks) n = nblocks ? nblocks : 1;
  if (n > WL_BLOCK_MAX_THREADS) n = WL_BLOCK_MAX_THREADS;
  return (unsigned)n;
}

/* Runs the jobs, one a thread (engine_parallel_for). Returns the first
 * job's failure. */
static inline int wl_run_block_jobs(wl_block_job *jobs, uint64_t njobs) {
  engine_parallel_for(njobs, (unsigned)njobs, wl_block_part, jobs);
  for (uint64_t t = 0; t < njobs; t++)
    if (jobs[t].rc) return jobs[t].rc;
  return 0;
}

/* Blocks [from, nblocks) straight into the batch's rows, on nthreads
 * threads; PRSTM_ENOMEM when a window was too narrow or short (the caller
 * then makes the rows again another way), or a generator's failure. The
 * batch's rows end before block `from` until every window is full. */
static inline int wl_generate_into_windows(prstm_batch *batch, uint64_t base, uint64_t n, uint64_t seed,
                                           uint64_t nthreads, uint64_t from, wl_make_block_fn make, const void *ctx) {
  const uint64_t nblocks = (n + WL_BLOCK_ROWS - 1) / WL_BLOCK_ROWS, span = nblocks - from;
  wl_block_job jobs[WL_BLOCK_MAX_THREADS];
  uint64_t njobs = 0;
  int rc = 0;
  for (uint64_t t = 0; t < nthreads && !rc; t++) {
    const uint64_t lo = from + span * t / nthreads, hi = from + span * (t + 1) / nthreads;
    if (lo == hi) continue;
    const uint64_t first = lo * WL_BLOCK_ROWS, last = hi * WL_BLOCK_ROWS < n ? hi * WL_BLOCK_ROWS : n;
    jobs[njobs] = (wl_block_job){make, ctx, seed, n, lo, hi, NULL, 0};
    rc = txtable_window_open(batch, base + first, last - first, &jobs[njobs].part);
    if (!rc) njobs++;
  }
  if (!rc && njobs) rc = wl_run_block_jobs(jobs, njobs);
  uint64_t filled = 0;
  for (uint64_t t = 0; t < njobs; t++) filled += txtable_window_close(batch, jobs[t].part);
  if (!rc && filled != n - from * WL_BLOCK_ROWS) rc = PRSTM_ENOMEM;
  return rc ? rc : txtable_set_rows(batch, base + n);
}

/* Where a window refused a value wider than 32 bits (txtable_widen), widens
 * the batch so that the windows can be filled again: returns 1 when it did. */
static inline int wl_widened(prstm_batch *batch) { return batch->wants_wide && txtable_widen(batch) == 0; }

/* Appends n generated rows to batch, made by `make` block by block on
 * `threads` threads (0: every core). `widest`, where the generator knows
 * it, bounds the argument words of its rows: every block, block 0 too, is
 * then made at once, and the batch's columns narrowed afterwards to its
 * widest row. With 0, block 0 is made first, alone, to tell the columns,
 * which for a batch of a few blocks was as long as all the others. A bound
 * that a row exceeds only costs time: the rows are then made again with a
 * part per thread. Returns the first failure (a generator's appends fail
 * only for memory). */
static inline int wl_generate_blocks(prstm_batch *batch, uint64_t n, uint64_t seed, unsigned threads, unsigned widest,
                                     wl_make_block_fn make, const void *ctx) {
  const uint64_t nblocks = (n + WL_BLOCK_ROWS - 1) / WL_BLOCK_ROWS;
  const uint64_t nthreads = wl_block_threads(threads, nblocks);
  const uint64_t base = prstm_batch_size(batch);
  const unsigned columns_before = prstm_batch_columns(batch);
  int rc = 0;
  if (widest && nblocks) {
    batch->widest = 0;
    rc = prstm_batch_reserve(batch, base + n, widest);
    if (!rc) rc = wl_generate_into_windows(batch, base, n, seed, nthreads, 0, make, ctx);
    if (rc == PRSTM_ENOMEM && wl_widened(batch)) {
      batch->widest = 0;
      rc = wl_generate_into_windows(batch, base, n, seed, nthreads, 0, make, ctx);
    }
    if (!rc) txtable_narrow_columns(batch, batch->widest > columns_before ? batch->widest : columns_before);
    if (rc != PRSTM_ENOMEM) return rc;
  } else {
    /* Block 0 on this thread, into a part that tells the columns. */
    prstm_batch *first = NULL;
    rc = prstm_batch_create(&first, prstm_batch_workload(batch));
    wl_block_job job0 = {make, ctx, seed, n, 0, nblocks ? 1 : 0, first, 0};
    if (!rc) rc = prstm_batch_reserve(first, n < WL_BLOCK_ROWS ? n : WL_BLOCK_ROWS, 0);
    if (!rc) rc = wl_run_block_jobs(&job0, 1);
    if (!rc) rc = prstm_batch_reserve(batch, base + n, prstm_batch_columns(first));
    if (!rc) rc = prstm_batch_append_rows(batch, first);
    prstm_batch_destroy(first);
    if (rc || nblocks < 2) return rc;
    rc = wl_generate_into_windows(batch, base, n, seed, nthreads, 1, make, ctx);
    if (rc == PRSTM_ENOMEM && wl_widened(batch))
      rc = wl_generate_into_windows(batch, base, n, seed, nthreads, 1, make, ctx);
    if (rc != PRSTM_ENOMEM) return rc;
  }

  /* A row wider than the columns: every block again, into a batch per
   * thread, joined in order. */
  txtable_set_rows(batch, base);
  wl_block_job jobs[WL_BLOCK_MAX_THREADS];
  rc = 0;
  for (uint64_t t = 0; t < nthreads; t++) {
    jobs[t] = (wl_block_job){make, ctx, seed, n, nblocks * t / nthreads, nblocks * (t + 1) / nthreads, NULL, 0};
    if (!rc) rc = prstm_batch_create(&jobs[t].part, prstm_batch_workload(batch));
    if (!rc) rc = prstm_batch_reserve(jobs[t].part, (jobs[t].block_hi - jobs[t].block_lo) * WL_BLOCK_ROWS, 0);
  }
  if (!rc) rc = wl_run_block_jobs(jobs, nthreads);
  if (!rc) {
    /* Room for every row at once, then the parts in order. A bound that
     * sent the rows here was exceeded, so the widest part is wider still. */
    unsigned cols = 0;
    for (uint64_t t = 0; t < nthreads; t++)
      if (prstm_batch_columns(jobs[t].part) > cols) cols = prstm_batch_columns(jobs[t].part);
    rc = prstm_batch_reserve(batch, base + n, cols);
    for (uint64_t t = 0; t < nthreads && !rc; t++) rc = prstm_batch_append_rows(batch, jobs[t].part);
  }
  for (uint64_t t = 0; t < nthreads; t++) prstm_batch_destroy(jobs[t].part);
  return rc;
}

/* ---- The end of a generator ---- */

/* Names a failed append (rc), or presorts the batch when the config asks:
 * what every generator does last. */
static inline int wl_generated(prstm_batch *batch, int rc, int presort, char *err, size_t errlen) {
  if (rc) {
    snprintf(err, errlen, "cannot append generated transaction: %s", prstm_strerror(rc));
    return rc;
  }
  return presort ? prstm_batch_presort(batch) : 0;
}

/* Whether a transaction was abandoned at global quiescence, where the
 * engine claims that no commit could have unblocked it: only then may an
 * invariant expect it still blocked on the final state. Retry mode gives up
 * on a schedule instead, which claims nothing. */
static inline int wl_abandoned_at_quiescence(prstm_status status, unsigned reason) {
  return status == PRSTM_ABANDONED && reason == PRSTM_REASON_QUIESCENT;
}

#endif /* PRSTM_WORKLOAD_UTIL_H */
