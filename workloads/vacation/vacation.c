/* vacation.c: the vacation workload's host side: types, knobs, initial state, the batch generator and the booking invariant. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workload_util.h"
#include "vacation_body.h"

PRSTM_CPU_WORKER(vacation, vacation_dispatch, VACATION_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(vacation);

static const prstm_type_desc vacation_types[] = {
    {"book",
     0,
     0,
     2,
     {{"customer", PRSTM_ARG_UINT}, {"type", PRSTM_ARG_UINT}},
     {"no such customer or room type", "customer already holds this room type", NULL}},
    {"cancel",
     1,
     0,
     2,
     {{"customer", PRSTM_ARG_UINT}, {"type", PRSTM_ARG_UINT}},
     {"no such customer or room type", "free rooms would exceed the capacity", NULL}},
    {"free_rooms", 0, 1, 1, {{"type", PRSTM_ARG_UINT}}, {"no such customer or room type", NULL}},
};

/* Knob indices, in the order of vacation_params[]. */
enum {
  VP_CUSTOMERS = 0,
  VP_ROOM_TYPES,
  VP_ROOMS,
  VP_SPACING,
  VP_SLOTS,
  VP_BOOKED,
  VP_SOLD_OUT,
  VP_STATE_SEED,
  VP_COUNT
};

static const prstm_param_desc vacation_params[VP_COUNT] = {
    {"customers", PRSTM_PARAM_STATE, 150000, 1, 100000000, 1, "customers"},
    {"room_types", PRSTM_PARAM_STATE, 1000, 1, 1000000, 1, "room types"},
    {"rooms", PRSTM_PARAM_STATE, 150, 1, 1000000000, 1, "rooms of each room type"},
    {"spacing", PRSTM_PARAM_STATE, 100, 2, 1000000, 1, "words from one room-type record to the next"},
    {"slots", PRSTM_PARAM_STATE, 4, 1, VACATION_MAX_SLOTS, 1, "reservation slots of each customer"},
    {"booked", PRSTM_PARAM_STATE, 0.5, 0, 1, 0, "share of the rooms of each open room type booked at the start"},
    {"sold_out", PRSTM_PARAM_STATE, 0.2, 0, 1, 0,
     "share of the room types fully booked at the start; the semantic pairs of a batch use them"},
    {"seed", PRSTM_PARAM_STATE, 1, 0, 9007199254740992.0, 1, "seed of the initial bookings"},
};

/* When a config's batch.generate gives no transactions. */
#define VACATION_DEFAULT_TRANSACTIONS 1000000ull

/* The sizes a state spec asks for. Sold-out types are the last ones, so
 * that the open types are 0 .. open - 1 in any state of the same shape. */
typedef struct vacation_shape {
  uint64_t customers, types, rooms, spacing, slots, seed;
  uint64_t sold_out_types, open_types, open_booked; /* rooms booked per open type */
  uint64_t types_base, customers_base, nwords;
} vacation_shape;

static int vacation_shape_of(const prstm_state_spec *spec, vacation_shape *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->customers = (uint64_t)spec->params[VP_CUSTOMERS];
  s->types = (uint64_t)spec->params[VP_ROOM_TYPES];
  s->rooms = (uint64_t)spec->params[VP_ROOMS];
  s->spacing = (uint64_t)spec->params[VP_SPACING];
  s->slots = (uint64_t)spec->params[VP_SLOTS];
  s->seed = (uint64_t)spec->params[VP_STATE_SEED];
  double booked = spec->params[VP_BOOKED], sold_out = spec->params[VP_SOLD_OUT];
  if (s->customers < 1 || s->types < 1 || s->rooms < 1 || s->spacing < 2 || s->slots < 1 ||
      s->slots > VACATION_MAX_SLOTS || !(booked >= 0 && booked <= 1) || !(sold_out >= 0 && sold_out <= 1)) {
    snprintf(err, errlen,
             "state: customers, room_types and rooms must be at least 1, spacing at least 2, "
             "slots between 1 and %d, booked and sold_out between 0 and 1",
             VACATION_MAX_SLOTS);
    return PRSTM_ECONFIG;
  }
  s->sold_out_types = (uint64_t)llround(sold_out * (double)s->types);
  s->open_types = s->types - s->sold_out_types;
  s->open_booked = (uint64_t)llround(booked * (double)s->rooms);
  s->types_base = VACATION_HEADER;
  /* Sizes are bounded by the knobs' maxima, so none of these overflows. */
  s->customers_base = s->types_base + s->types * s->spacing;
  s->nwords = s->customers_base + s->customers * s->slots;
  if (s->nwords > (1ull << 31)) {
    snprintf(err, errlen, "state: %llu words do not fit (at most 2^31)", (unsigned long long)s->nwords);
    return PRSTM_ETOOBIG;
  }
  uint64_t holdings = s->sold_out_types * s->rooms + s->open_types * s->open_booked;
  if (holdings > s->customers * s->slots) {
    snprintf(err, errlen,
             "state: the initial bookings (%llu) need more reservation slots than customers x slots (%llu); "
             "lower booked or sold_out, or raise customers or slots",
             (unsigned long long)holdings, (unsigned long long)(s->customers * s->slots));
    return PRSTM_ECONFIG;
  }
  return 0;
}

static int vacation_holds(const prstm_word *w, const vacation_shape *s, uint64_t c, uint64_t t) {
  const prstm_word *slot = w + s->customers_base + c * s->slots;
  for (uint64_t i = 0; i < s->slots; i++)
    if (slot[i] == t + 1) return 1;
  return 0;
}

/* Gives customer c room type t in its first empty slot; 0 when it has none
 * or holds t already. */
static int vacation_give(prstm_word *w, const vacation_shape *s, uint64_t c, uint64_t t) {
  prstm_word *slot = w + s->customers_base + c * s->slots;
  uint64_t empty = s->slots;
  for (uint64_t i = 0; i < s->slots; i++) {
    if (slot[i] == t + 1) return 0;
    if (slot[i] == 0 && empty == s->slots) empty = i;
  }
  if (empty == s->slots) return 0;
  slot[empty] = t + 1;
  return 1;
}

#define VACATION_BUILD_AHEAD 16u

/* Builds the initial words of a shape: every type's free rooms, and random
 * customers holding the booked rooms. Both init_state and the generator
 * (which must know who holds what) call it, so they always agree. */
static int vacation_build(const vacation_shape *s, prstm_word **out, char *err, size_t errlen) {
  prstm_word *w = calloc((size_t)s->nwords, sizeof *w);
  if (!w) {
    snprintf(err, errlen, "cannot allocate %llu state words", (unsigned long long)s->nwords);
    return PRSTM_ENOMEM;
  }
  w[0] = s->types;
  w[1] = s->spacing;
  w[2] = s->customers;
  w[3] = s->slots;
  w[4] = s->types_base;
  w[5] = s->customers_base;
  uint64_t rng = s->seed ^ 0x76616361ull;
  uint64_t cursor = 0; /* where the fallback scan goes on, so a full state costs linear time */
  /* The random customers tried, drawn VACATION_BUILD_AHEAD tries ahead of
   * their use, each one's slots prefetched when drawn: every try takes the
   * stream's next draw, whatever the try before it found, so the customers
   * are the same. The default state's 90,000 bookings among 150,000
   * customers spent most of a warm build (3 ms on one core) waiting for
   * the customers' slots. */
  uint64_t ahead[VACATION_BUILD_AHEAD];
  for (unsigned k = 0; k < VACATION_BUILD_AHEAD; k++) {
    ahead[k] = wl_below(&rng, s->customers);
    WL_PREFETCH(w + s->customers_base + ahead[k] * s->slots);
  }
  unsigned next = 0;
  for (uint64_t t = 0; t < s->types; t++) {
    uint64_t booked = t < s->open_types ? s->open_booked : s->rooms;
    w[s->types_base + t * s->spacing] = s->rooms - booked;
    w[s->types_base + t * s->spacing + 1] = s->rooms;
    for (uint64_t r = 0; r < booked; r++) {
      int given = 0;
      for (int tries = 0; tries < 32 && !given; tries++) {
        const uint64_t c = ahead[next];
        ahead[next] = wl_below(&rng, s->customers);
        WL_PREFETCH(w + s->customers_base + ahead[next] * s->slots);
        next = (next + 1) % VACATION_BUILD_AHEAD;
        given = vacation_give(w, s, c, t);
      }
      for (uint64_t k = 0; k < s->customers && !given; k++) {
        given = vacation_give(w, s, cursor, t);
        cursor = (cursor + 1) % s->customers;
      }
      if (!given) {
        /* Enough slots exist overall (checked by the shape), but a type with
         * more rooms than customers cannot be filled: no customer holds a
         * type twice. */
        free(w);
        snprintf(err, errlen, "state: room type %llu has more booked rooms than there are customers",
                 (unsigned long long)t);
        return PRSTM_ECONFIG;
      }
    }
  }
  *out = w;
  return 0;
}

static int vacation_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                               size_t errlen) {
  vacation_shape s;
  int rc = vacation_shape_of(spec, &s, err, errlen);
  if (rc) return rc;
  if ((rc = vacation_build(&s, words, err, errlen)) != 0) return rc;
  *nwords = s.nwords;
  return 0;
}

/* ---- The generator ----
 *
 * Random traffic books and cancels open room types only, following a model
 * of the state in generation order: a book goes to a type with a free room
 * and a customer with an empty slot who never held that type (in the state or
 * earlier in the batch), a cancel to a booking that exists at that point. So
 * the generation order itself is a serial schedule in which everything
 * commits, and with the open types about half full a reordering rarely
 * makes one sell out. Cancels of bookings made earlier in the batch do depend on them;
 * the higher tag makes such a cancel meet its booking's absence and wait.
 *
 * The rows are made in blocks on every core, each block from a stream of
 * its own, so no block's model depends on another's: each block owns a
 * random share of the customers (with their initial bookings) and a share of
 * every open type's free rooms, and its rows are chunks spread over the
 * whole table (vacation_fill). The blocks' free rooms add up to the state's
 * at every point of the table, whatever the order the blocks' rows
 * interleave in, so the table order stays a schedule in which all commit.
 *
 * Semantic pairs use the sold-out types: a book of a sold-out type placed
 * before the cancel (by a holder of that type) that frees its room, at
 * random rows. Each initial holder is cancelled once, so while there are
 * enough of them every pair can always commit; beyond that, a pair cancels
 * the customer booked by an earlier pair of the same type (a chain), and some
 * may be abandoned because a later booking took the freed room first. The
 * pairs' bookers are customers set apart from random traffic, chosen before
 * the blocks are made by a pass over the pairs' rows in table order; a
 * holder's slot freed by a pair is not handed to random traffic. */
typedef struct vacation_booking {
  uint64_t customer, type;
} vacation_booking;

/* A model of some customers (local numbers 0, 1 ..., customer ids[c])
 * and of the open types' free rooms, in generation order. */
typedef struct vacation_gen {
  vacation_shape s;
  uint64_t rng;
  prstm_batch *batch;
  const uint64_t *ids;    /* customer id of each local customer */
  uint64_t *free_rooms;   /* per open type */
  uint8_t *used;          /* slots in use per customer */
  uint64_t *with_slot;    /* the customers with an empty slot, in no order */
  uint64_t *with_slot_at; /* each customer's place in with_slot, or UINT64_MAX */
  uint64_t nwith_slot;
  uint8_t *ever;          /* bit (c * types + t): c held t at some point; NULL when too large */
  vacation_booking *open; /* current bookings of open types */
  uint64_t nopen, capopen;
  const double *weight; /* cumulative, by type index */
} vacation_gen;

static int vacation_ever(const vacation_gen *g, uint64_t c, uint64_t t) {
  if (!g->ever) return 0;
  uint64_t bit = c * g->s.types + t;
  return (g->ever[bit >> 3] >> (bit & 7)) & 1;
}
static void vacation_mark(vacation_gen *g, uint64_t c, uint64_t t) {
  if (!g->ever) return;
  uint64_t bit = c * g->s.types + t;
  g->ever[bit >> 3] |= (uint8_t)(1u << (bit & 7));
}

static int vacation_open_push(vacation_gen *g, uint64_t c, uint64_t t) {
  if (g->nopen == g->capopen) {
    uint64_t cap = g->capopen ? 2 * g->capopen : 1024;
    vacation_booking *p = realloc(g->open, (size_t)cap * sizeof *p);
    if (!p) return PRSTM_ENOMEM;
    g->open = p;
    g->capopen = cap;
  }
  g->open[g->nopen].customer = c;
  g->open[g->nopen].type = t;
  g->nopen++;
  return 0;
}

/* Keeps a customer's membership of with_slot true to its used count; every
 * change of used goes through these two. */
static void vacation_slot_update(vacation_gen *g, uint64_t c) {
  const int has_slot = g->used[c] < g->s.slots, listed = g->with_slot_at[c] != UINT64_MAX;
  if (has_slot && !listed) {
    g->with_slot_at[c] = g->nwith_slot;
    g->with_slot[g->nwith_slot++] = c;
  } else if (!has_slot && listed) {
    uint64_t at = g->with_slot_at[c], last = g->with_slot[--g->nwith_slot];
    g->with_slot[at] = last;
    g->with_slot_at[last] = at;
    g->with_slot_at[c] = UINT64_MAX;
  }
}
static void vacation_take_slot(vacation_gen *g, uint64_t c) {
  g->used[c]++;
  vacation_slot_update(g, c);
}
static void vacation_free_slot(vacation_gen *g, uint64_t c) {
  g->used[c]--;
  vacation_slot_update(g, c);
}

/* A uniform draw among the customers that can book t (an empty slot, and
 * never held t), or UINT64_MAX. Draws come from the customers with an empty
 * slot, not from all of them: at semantic ratio 0.5 of configs/vacation.json
 * the pairs' bookers filled nearly every slot, a draw among all customers
 * fell back to a scan of all 150,000 on almost every book, and generating
 * the batch had not finished after minutes. */
static uint64_t vacation_pick_customer(vacation_gen *g, uint64_t t) {
  if (g->nwith_slot == 0) return UINT64_MAX;
  for (int tries = 0; tries < 64; tries++) {
    uint64_t c = g->with_slot[wl_below(&g->rng, g->nwith_slot)];
    if (!vacation_ever(g, c, t)) return c;
  }
  uint64_t start = wl_below(&g->rng, g->nwith_slot);
  for (uint64_t k = 0; k < g->nwith_slot; k++) {
    uint64_t c = g->with_slot[(start + k) % g->nwith_slot];
    if (!vacation_ever(g, c, t)) return c;
  }
  return UINT64_MAX;
}

static int vacation_append(vacation_gen *g, unsigned type, uint64_t a0, uint64_t a1) {
  prstm_word args[2] = {a0, a1};
  return txtable_append_generated(g->batch, type, args, type == VACATION_FREE_ROOMS ? 1 : 2);
}

/* A random book of an open type; 1 when none is possible now. */
static int vacation_random_book(vacation_gen *g, int *none) {
  *none = 1;
  if (g->s.open_types == 0) return 0;
  for (int tries = 0; tries < 64; tries++) {
    uint64_t t = wl_below(&g->rng, g->s.open_types);
    if (g->free_rooms[t] == 0) continue;
    uint64_t c = vacation_pick_customer(g, t);
    if (c == UINT64_MAX) continue;
    *none = 0;
    g->free_rooms[t]--;
    int rc = vacation_open_push(g, c, t);
    if (rc) return rc;
    vacation_take_slot(g, c);
    vacation_mark(g, c, t);
    return vacation_append(g, VACATION_BOOK, g->ids[c], t);
  }
  return 0;
}

static int vacation_random_cancel(vacation_gen *g, int *none) {
  *none = g->nopen == 0;
  if (*none) return 0;
  uint64_t i = wl_below(&g->rng, g->nopen);
  vacation_booking b = g->open[i];
  g->open[i] = g->open[--g->nopen];
  g->free_rooms[b.type]++;
  vacation_free_slot(g, b.customer);
  return vacation_append(g, VACATION_CANCEL, g->ids[b.customer], b.type);
}

/* One transaction drawn from the mix; a book or cancel that the model cannot
 * place becomes the other, and a query when neither can be placed. */
static int vacation_emit_random(vacation_gen *g) {
  unsigned type = wl_pick(&g->rng, g->weight, 3);
  int none = 0, rc = 0;
  if (type == VACATION_BOOK) {
    if ((rc = vacation_random_book(g, &none)) != 0 || !none) return rc;
    if ((rc = vacation_random_cancel(g, &none)) != 0 || !none) return rc;
  } else if (type == VACATION_CANCEL) {
    if ((rc = vacation_random_cancel(g, &none)) != 0 || !none) return rc;
    if ((rc = vacation_random_book(g, &none)) != 0 || !none) return rc;
  }
  return vacation_append(g, VACATION_FREE_ROOMS, wl_below(&g->rng, g->s.types), 0);
}

static void vacation_gen_free(vacation_gen *g) {
  free(g->free_rooms);
  free(g->used);
  free(g->with_slot);
  free(g->with_slot_at);
  free(g->ever);
  free(g->open);
}

/* Loads the model of customers ids[0 .. ncust) from the initial words w:
 * their slots, their history and (with_open) their bookings of open types. */
static int vacation_gen_model(vacation_gen *g, const prstm_word *w, const uint64_t *ids, uint64_t ncust,
                              int with_open) {
  const vacation_shape *s = &g->s;
  g->ids = ids;
  g->free_rooms = calloc((size_t)(s->open_types ? s->open_types : 1), sizeof *g->free_rooms);
  g->used = calloc((size_t)(ncust ? ncust : 1), 1);
  g->with_slot = malloc((size_t)(ncust ? ncust : 1) * sizeof *g->with_slot);
  g->with_slot_at = malloc((size_t)(ncust ? ncust : 1) * sizeof *g->with_slot_at);
  /* The history bitset is what keeps a customer from booking a type again
   * after cancelling it (which could fail in another order); past 512 MiB it
   * is left out, at the price of such rare failures. */
  uint64_t bits = ncust * s->types;
  if (bits / 8 < (512ull << 20)) g->ever = calloc((size_t)(bits / 8 + 1), 1);
  if (!g->free_rooms || !g->used || !g->with_slot || !g->with_slot_at || (bits / 8 < (512ull << 20) && !g->ever))
    return PRSTM_ENOMEM;
  for (uint64_t c = 0; c < ncust; c++) {
    /* A block's customers are random ones of the state (those set apart
     * for the pairs' bookers are consecutive): their slots are asked for
     * some customers ahead. */
    if (c + VACATION_BUILD_AHEAD < ncust) WL_PREFETCH(w + s->customers_base + ids[c + VACATION_BUILD_AHEAD] * s->slots);
    const prstm_word *slot = w + s->customers_base + ids[c] * s->slots;
    for (uint64_t i = 0; i < s->slots; i++) {
      if (!slot[i]) continue;
      uint64_t t = slot[i] - 1;
      g->used[c]++;
      vacation_mark(g, c, t);
      if (with_open && t < s->open_types && vacation_open_push(g, c, t)) return PRSTM_ENOMEM;
    }
    g->with_slot_at[c] = UINT64_MAX;
    vacation_slot_update(g, c);
  }
  return 0;
}

/* What every block of a generated batch shares, read only while the blocks
 * are made. */
typedef struct vacation_blocks {
  vacation_shape s;
  const prstm_word *w; /* the initial words */
  double weight[3];
  uint64_t n, base, seed; /* the batch's rows, from row base of the batch */
  uint64_t nblocks;
  uint64_t random_customers; /* customers 0 .. random_customers - 1 take random traffic */
  wl_perm customers;         /* deals those customers out to the blocks */
  wl_perm pairs;             /* places the semantic pairs */
  uint64_t npairs;
  wl_pair_rows pair_rows;          /* the pairs' rows */
  const vacation_booking *holders; /* initial holders of sold-out types, shuffled */
  uint64_t nholders;
  const uint64_t *pair_booker; /* customer booked by pair p */
  const uint64_t *pair_type;   /* room type of pair p */
} vacation_blocks;

/* Block b's rows are chunks b, b + nblocks, b + 2 nblocks ... of
 * VACATION_CHUNK_ROWS rows each, so every block's rows, and its customers,
 * are spread over the whole table: a thread that runs a range of the table
 * meets every customer, as it would in a batch made on one thread. */
#define VACATION_CHUNK_ROWS 64u

/* Fills block `block`'s rows through win, a window on batch; *filled adds
 * the rows win had filled before each move. */
static int vacation_fill_block(const vacation_blocks *vb, prstm_batch *batch, prstm_batch *win, uint64_t block,
                               uint64_t *filled) {
  const uint64_t nc = vb->random_customers;
  const uint64_t lo = nc * block / vb->nblocks, hi = nc * (block + 1) / vb->nblocks;
  vacation_gen g;
  memset(&g, 0, sizeof g);
  g.s = vb->s;
  g.rng = wl_block_seed(vb->seed, block);
  g.batch = win;
  g.weight = vb->weight;
  uint64_t *ids = malloc((size_t)(hi - lo + 1) * sizeof *ids);
  int rc = ids ? 0 : PRSTM_ENOMEM;
  for (uint64_t k = lo; k < hi && !rc; k++) ids[k - lo] = wl_perm_at(&vb->customers, k);
  if (!rc) rc = vacation_gen_model(&g, vb->w, ids, hi - lo, 1);
  /* The block's share of each open type's free rooms. */
  for (uint64_t t = 0; t < g.s.open_types && !rc; t++) {
    const uint64_t free_t = vb->w[g.s.types_base + t * g.s.spacing];
    g.free_rooms[t] = free_t * (block + 1) / vb->nblocks - free_t * block / vb->nblocks;
  }
  for (uint64_t chunk = block; chunk * VACATION_CHUNK_ROWS < vb->n && !rc; chunk += vb->nblocks) {
    const uint64_t first = chunk * VACATION_CHUNK_ROWS;
    const uint64_t rows = vb->n - first < VACATION_CHUNK_ROWS ? vb->n - first : VACATION_CHUNK_ROWS;
    uint64_t before = 0;
    rc = txtable_window_move(batch, win, vb->base + first, rows, &before);
    *filled += before;
    uint64_t slots[VACATION_CHUNK_ROWS], partners[VACATION_CHUNK_ROWS];
    wl_pair_rows_slots(&vb->pair_rows, first, rows, slots, partners);
    for (uint64_t i = first; i < first + rows && rc == 0; i++) {
      const uint64_t slot = slots[i - first];
      if (slot == WL_RANDOM_ROW) {
        rc = vacation_emit_random(&g);
        continue;
      }
      const uint64_t p = slot >> 1, t = vb->pair_type[p];
      if (!(slot & 1)) {
        rc = vacation_append(&g, VACATION_BOOK, vb->pair_booker[p], t);
      } else {
        const uint64_t c = p < vb->nholders ? vb->holders[p].customer : vb->pair_booker[p - vb->nholders];
        rc = vacation_append(&g, VACATION_CANCEL, c, t);
      }
    }
  }
  vacation_gen_free(&g);
  free(ids);
  return rc;
}

/* One thread's blocks, through one window of its own. */
typedef struct vacation_fill_job {
  const vacation_blocks *vb;
  prstm_batch *batch;
  prstm_batch *win[ENGINE_MAX_PARTS];
  uint64_t filled[ENGINE_MAX_PARTS];
  int rc[ENGINE_MAX_PARTS];
} vacation_fill_job;

static void vacation_fill_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  vacation_fill_job *f = arg;
  for (uint64_t b = from; b < to && !f->rc[part]; b++)
    f->rc[part] = vacation_fill_block(f->vb, f->batch, f->win[part], b, &f->filled[part]);
}

/* Appends the batch's n rows, its blocks on `threads` threads (0: every
 * core); the rows are the same for any count. */
static int vacation_fill(const vacation_blocks *vb, prstm_batch *batch, unsigned threads) {
  const unsigned parts = wl_block_threads(threads, vb->nblocks);
  vacation_fill_job f;
  memset(&f, 0, sizeof f);
  f.vb = vb;
  f.batch = batch;
  int rc = prstm_batch_reserve(batch, vb->base + vb->n, 2);
  /* A value wider than 32 bits in a narrow batch is refused by its window
   * (txtable_widen): the batch is widened and filled again. */
  for (int attempt = 0; attempt < 2 && !rc; attempt++) {
    memset(f.win, 0, sizeof f.win);
    memset(f.rc, 0, sizeof f.rc);
    memset(f.filled, 0, sizeof f.filled);
    unsigned opened = 0;
    for (; opened < parts && !rc; opened++) rc = txtable_window_open(batch, vb->base, 0, &f.win[opened]);
    if (!rc) engine_parallel_for(vb->nblocks, parts, vacation_fill_part, &f);
    uint64_t filled = 0;
    for (unsigned k = 0; k < opened; k++) {
      if (!rc) rc = f.rc[k];
      filled += f.filled[k] + (f.win[k] ? txtable_window_close(batch, f.win[k]) : 0);
    }
    if (!rc && filled != vb->n) rc = PRSTM_ENOMEM; /* a row wider than the batch's columns */
    if (rc != PRSTM_ENOMEM || !batch->wants_wide || attempt) break;
    rc = txtable_widen(batch);
  }
  return rc ? rc : txtable_set_rows(batch, vb->base + vb->n);
}

/* A pair's row and what happens there: its book (the earlier row) or its
 * cancel. */
typedef struct vacation_pair_event {
  uint64_t row, pair;
  int cancel;
} vacation_pair_event;

static int vacation_event_cmp(const void *a, const void *b) {
  uint64_t x = ((const vacation_pair_event *)a)->row, y = ((const vacation_pair_event *)b)->row;
  return x < y ? -1 : x > y;
}

/* The customer pair p books, chosen when first needed (its book row, or the
 * cancel row of the pair that chains on it, whichever comes first) among
 * the customers set apart for pairs (model g, customers first_id on). */
static uint64_t vacation_pair_booker(vacation_gen *g, uint64_t *booker, const uint64_t *type, uint64_t p) {
  if (booker[p] == UINT64_MAX) {
    uint64_t c = vacation_pick_customer(g, type[p]);
    if (c == UINT64_MAX) {
      booker[p] = wl_below(&g->rng, g->s.customers); /* it will fail; the run still ends */
    } else {
      booker[p] = g->ids[c];
      vacation_take_slot(g, c);
      vacation_mark(g, c, type[p]);
    }
  }
  return booker[p];
}

/* Chooses every pair's booker by a pass over the pairs' rows in table
 * order: a booker has an empty slot at its book and never held the type,
 * and the cancel of a booker (by the pair that chains on it) frees its
 * slot. Reserved customers are first_id .. customers - 1. */
static int vacation_choose_bookers(vacation_blocks *vb, const prstm_word *w, uint64_t first_id, uint64_t seed,
                                   uint64_t *booker, const uint64_t *type) {
  const uint64_t nres = vb->s.customers - first_id, npairs = vb->npairs;
  uint64_t *ids = malloc((size_t)(nres ? nres : 1) * sizeof *ids);
  vacation_pair_event *ev = malloc((size_t)(2 * npairs) * sizeof *ev);
  vacation_gen g;
  memset(&g, 0, sizeof g);
  g.s = vb->s;
  g.rng = seed ^ 0x626f6f6b65727300ull; /* "bookers" */
  int rc = ids && ev ? 0 : PRSTM_ENOMEM;
  for (uint64_t c = 0; c < nres && !rc; c++) ids[c] = first_id + c;
  if (!rc) rc = vacation_gen_model(&g, w, ids, nres, 0);
  for (uint64_t p = 0; p < npairs && !rc; p++) {
    const uint64_t *row_of = vb->pair_rows.row_of;
    const uint64_t a = row_of ? row_of[2 * p] : wl_perm_inverse(&vb->pairs, 2 * p);
    const uint64_t b = row_of ? row_of[2 * p + 1] : wl_perm_inverse(&vb->pairs, 2 * p + 1);
    ev[2 * p] = (vacation_pair_event){a < b ? a : b, p, 0};
    ev[2 * p + 1] = (vacation_pair_event){a < b ? b : a, p, 1};
    booker[p] = UINT64_MAX;
  }
  if (!rc) qsort(ev, (size_t)(2 * npairs), sizeof *ev, vacation_event_cmp);
  for (uint64_t k = 0; k < 2 * npairs && !rc; k++) {
    const uint64_t p = ev[k].pair;
    if (!ev[k].cancel) {
      vacation_pair_booker(&g, booker, type, p);
      continue;
    }
    const uint64_t c =
        p < vb->nholders ? vb->holders[p].customer : vacation_pair_booker(&g, booker, type, p - vb->nholders);
    if (c >= first_id && g.used[c - first_id]) vacation_free_slot(&g, c - first_id);
  }
  vacation_gen_free(&g);
  free(ids);
  free(ev);
  return rc;
}

static int vacation_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch,
                             char *err, size_t errlen) {
  vacation_blocks vb;
  memset(&vb, 0, sizeof vb);
  int rc = vacation_shape_of(state, &vb.s, err, errlen);
  if (rc) return rc;
  const vacation_shape *s = &vb.s;
  uint64_t n = spec->transactions ? spec->transactions : VACATION_DEFAULT_TRANSACTIONS;
  /* Default mix: bookings and cancellations in balance, so that the open
   * types stay about as full as they start, and a few queries. */
  double w[3] = {0.45, 0.45, 0.1};
  if ((rc = wl_mix_weights(spec, batch, w, 3, NULL, err, errlen)) != 0 ||
      (rc = wl_read_only_share(spec, w, 2, "book or cancel", err, errlen)) != 0 ||
      (rc = wl_cumulate(w, vb.weight, 3, err, errlen)) != 0)
    return rc;
  vb.npairs = (uint64_t)(spec->semantic_ratio * (double)n / 2.0);
  if (vb.npairs && s->sold_out_types == 0) {
    snprintf(err, errlen, "semantic_ratio %g needs sold-out room types: set state.sold_out above 0",
             spec->semantic_ratio);
    return PRSTM_ECONFIG;
  }
  prstm_word *words = NULL;
  if ((rc = vacation_build(s, &words, err, errlen)) != 0) return rc;
  vb.w = words;
  vb.n = n;
  vb.base = prstm_batch_size(batch);
  vb.seed = spec->seed;
  vb.nblocks = (n + WL_BLOCK_ROWS - 1) / WL_BLOCK_ROWS;
  /* Pairs' bookers come from the top customers, one a pair up to half of
   * them, which random traffic never touches. */
  const uint64_t reserved = vb.npairs < s->customers / 2 ? vb.npairs : s->customers / 2;
  vb.random_customers = s->customers - reserved;
  wl_perm_init(&vb.customers, spec->seed ^ 0x637573746f6d6572ull, vb.random_customers); /* "customer" */
  wl_perm_init(&vb.pairs, spec->seed, n);
  wl_pair_rows_init(&vb.pair_rows, &vb.pairs, vb.npairs, n, spec->threads);
  vacation_booking *holders = NULL;
  uint64_t *booker = NULL, *type = NULL;
  if (vb.npairs) {
    holders = malloc((size_t)(s->sold_out_types * s->rooms + 1) * sizeof *holders);
    booker = malloc((size_t)vb.npairs * sizeof *booker);
    type = malloc((size_t)vb.npairs * sizeof *type);
    if (!holders || !booker || !type) rc = PRSTM_ENOMEM;
    /* The initial holders of sold-out types, shuffled. */
    uint64_t nh = 0, hrng = spec->seed ^ 0x9c0ffee5ull;
    for (uint64_t c = 0; c < s->customers && !rc; c++)
      for (uint64_t i = 0; i < s->slots; i++) {
        const prstm_word v = words[s->customers_base + c * s->slots + i];
        if (v && v - 1 >= s->open_types) holders[nh++] = (vacation_booking){c, v - 1};
      }
    for (uint64_t i = nh; i > 1 && !rc; i--) {
      uint64_t j = wl_below(&hrng, i);
      vacation_booking x = holders[i - 1];
      holders[i - 1] = holders[j];
      holders[j] = x;
    }
    vb.holders = holders;
    vb.nholders = nh;
    /* Pair p frees the room of holder p mod holders: the initial holder, or
     * the customer booked by the pair before it in that chain. */
    for (uint64_t p = 0; p < vb.npairs && !rc; p++) type[p] = holders[p % nh].type;
    if (!rc) rc = vacation_choose_bookers(&vb, words, vb.random_customers, spec->seed, booker, type);
    vb.pair_booker = booker;
    vb.pair_type = type;
  }
  if (rc == PRSTM_ENOMEM) {
    snprintf(err, errlen, "cannot allocate the generator's model of the state");
  } else if (!rc) {
    rc = vacation_fill(&vb, batch, spec->threads);
    rc = wl_generated(batch, rc, spec->presorted, err, errlen);
  }
  wl_pair_rows_free(&vb.pair_rows);
  free(holders);
  free(booker);
  free(type);
  free(words);
  return rc;
}

/* ---- The invariant ---- */

/* A signed change of one (customer, type) holding, to be summed per key. */
typedef struct vacation_delta {
  uint64_t key;
  int64_t d;
} vacation_delta;

static int vacation_delta_cmp(const void *a, const void *b) {
  uint64_t x = ((const vacation_delta *)a)->key, y = ((const vacation_delta *)b)->key;
  return x < y ? -1 : x > y;
}

/* Whether the final words still have the layout of the shape the spec
 * describes, so that its initial state is the one this run started from. */
static int vacation_spec_matches(const prstm_state_spec *spec, const prstm_word *w, uint64_t nwords,
                                 vacation_shape *s) {
  char err[256];
  if (!spec || vacation_shape_of(spec, s, err, sizeof err) != 0) return 0;
  return nwords == s->nwords && w[0] == s->types && w[1] == s->spacing && w[2] == s->customers && w[3] == s->slots &&
         w[4] == s->types_base && w[5] == s->customers_base;
}

/* Checks, on the final state, independently of the engine:
 *  - per room type: free + the customers' slots holding it == capacity (the
 *    capacity from the state spec when known), and free <= capacity;
 *  - no customer holds a type twice, and no slot names a type that does not exist;
 *  - per type: committed books - committed cancels == initial free - final free;
 *  - per (customer, type): initially held + committed books - committed
 *    cancels == finally held, which no reordering of the counts can fake;
 *  - every booking abandoned at quiescence still meets a sold-out type or a
 *    customer with no free slot (it would postpone again), and every
 *    abandoned cancel still finds no booking. */
static int vacation_check_invariant(const prstm_engine *engine, const prstm_batch *b, int *ok, char *msg,
                                    size_t msglen) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  *ok = 0;
  if (!w || nwords < VACATION_HEADER) {
    snprintf(msg, msglen, "not a vacation state: %llu words", (unsigned long long)nwords);
    return 0;
  }
  vacation_shape s;
  memset(&s, 0, sizeof s);
  int known = vacation_spec_matches(prstm_engine_state_spec(engine), w, nwords, &s);
  if (!known) {
    /* A state given directly: take the layout from its header, and check
     * it against the size before trusting it. */
    s.types = w[0];
    s.spacing = w[1];
    s.customers = w[2];
    s.slots = w[3];
    s.types_base = w[4];
    s.customers_base = w[5];
    if (s.slots < 1 || s.slots > VACATION_MAX_SLOTS || s.spacing < 2 || s.types_base < VACATION_HEADER ||
        s.types > nwords || s.customers > nwords || s.types_base + s.types * s.spacing > s.customers_base ||
        s.customers_base + s.customers * s.slots > nwords) {
      snprintf(msg, msglen, "the state header does not describe a vacation state of %llu words",
               (unsigned long long)nwords);
      return 0;
    }
  }
  uint64_t *held = calloc((size_t)s.types + 1, sizeof *held);
  int64_t *net = calloc((size_t)s.types + 1, sizeof *net);
  prstm_word *initial = NULL;
  uint64_t n = prstm_batch_size(b), ndelta = 0;
  vacation_delta *delta = NULL;
  if (known) {
    char err[256];
    if (vacation_build(&s, &initial, err, sizeof err) != 0) initial = NULL;
    delta = malloc((size_t)(n + 2 * s.customers * s.slots + 1) * sizeof *delta);
  }
  if (!held || !net || (known && (!initial || !delta))) {
    free(held);
    free(net);
    free(initial);
    free(delta);
    return PRSTM_ENOMEM;
  }
  uint64_t bad_slots = 0, twice = 0, bad_types = 0, blocked_bad = 0, bad_pairs = 0, bad_net = 0;
  uint64_t books = 0, cancels = 0, abandoned = 0;
  for (uint64_t c = 0; c < s.customers; c++) {
    const prstm_word *slot = w + s.customers_base + c * s.slots;
    for (uint64_t i = 0; i < s.slots; i++) {
      if (!slot[i]) continue;
      if (slot[i] > s.types) {
        bad_slots++;
        continue;
      }
      held[slot[i] - 1]++;
      for (uint64_t j = 0; j < i; j++) twice += slot[j] == slot[i];
      if (known) delta[ndelta++] = (vacation_delta){c * s.types + slot[i] - 1, -1};
    }
    if (known) {
      const prstm_word *init = initial + s.customers_base + c * s.slots;
      for (uint64_t i = 0; i < s.slots; i++)
        if (init[i]) delta[ndelta++] = (vacation_delta){c * s.types + init[i] - 1, +1};
    }
  }
  for (uint64_t i = 0; i < n; i++) {
    prstm_status st;
    unsigned reason = 0;
    prstm_batch_outcome(b, i, &st, &reason, NULL);
    unsigned type = prstm_batch_type(b, i);
    if (type == VACATION_FREE_ROOMS) continue;
    uint64_t c = prstm_batch_arg(b, i, 0), t = prstm_batch_arg(b, i, 1);
    int valid = c < s.customers && t < s.types;
    if (st == PRSTM_COMMITTED && valid) {
      int d = type == VACATION_BOOK ? +1 : -1;
      if (d > 0)
        books++;
      else
        cancels++;
      net[t] += d;
      if (known) delta[ndelta++] = (vacation_delta){c * s.types + t, d};
    } else if (st == PRSTM_COMMITTED) {
      bad_types++; /* a body must fail an unknown customer or type */
    } else if (wl_abandoned_at_quiescence(st, reason)) {
      abandoned++;
      if (!valid) {
        blocked_bad++;
        continue;
      }
      const prstm_word *slot = w + s.customers_base + c * s.slots;
      int holds = 0, empty = 0;
      for (uint64_t k = 0; k < s.slots; k++) {
        holds |= slot[k] == t + 1;
        empty |= slot[k] == 0;
      }
      /* A book waits for a free room and a free slot; holding the type
       * would have failed it. */
      if (type == VACATION_BOOK && (holds || (w[s.types_base + t * s.spacing] != 0 && empty))) blocked_bad++;
      if (type == VACATION_CANCEL && holds) blocked_bad++;
    }
  }
  uint64_t bad_capacity = 0, total_free = 0, total_held = 0;
  for (uint64_t t = 0; t < s.types; t++) {
    uint64_t f = w[s.types_base + t * s.spacing];
    uint64_t cap = known ? s.rooms : w[s.types_base + t * s.spacing + 1];
    total_free += f;
    total_held += held[t];
    if (w[s.types_base + t * s.spacing + 1] != cap || f > cap || f + held[t] != cap) bad_capacity++;
    if (known) {
      uint64_t f0 = initial[s.types_base + t * s.spacing];
      if ((int64_t)(f0 - f) != net[t]) bad_net++;
    }
  }
  if (known) {
    qsort(delta, (size_t)ndelta, sizeof *delta, vacation_delta_cmp);
    for (uint64_t i = 0; i < ndelta;) {
      int64_t sum = 0;
      uint64_t j = i;
      for (; j < ndelta && delta[j].key == delta[i].key; j++) sum += delta[j].d;
      if (sum != 0) bad_pairs++;
      i = j;
    }
  }
  *ok = bad_slots == 0 && twice == 0 && bad_types == 0 && blocked_bad == 0 && bad_capacity == 0 && bad_net == 0 &&
        bad_pairs == 0;
  snprintf(msg, msglen,
           "%llu room types: free %llu + booked %llu, %llu types off capacity; %llu double holdings, %llu bad "
           "slots; committed books %llu - cancels %llu %s; %llu (customer, type) holdings off; %llu of %llu "
           "abandoned not blocked on the final state",
           (unsigned long long)s.types, (unsigned long long)total_free, (unsigned long long)total_held,
           (unsigned long long)bad_capacity, (unsigned long long)twice, (unsigned long long)(bad_slots + bad_types),
           (unsigned long long)books, (unsigned long long)cancels,
           known ? (bad_net ? "!= initial free - final free on some types" : "= initial free - final free per type")
                 : "(initial state unknown)",
           (unsigned long long)bad_pairs, (unsigned long long)blocked_bad, (unsigned long long)abandoned);
  free(held);
  free(net);
  free(initial);
  free(delta);
  return 0;
}

const prstm_workload prstm_workload_vacation = {
    .name = "vacation",
    .ntypes = sizeof vacation_types / sizeof vacation_types[0],
    .types = vacation_types,
    .nvariants = 1,
    /* Every book and cancel reads and writes the free-room counter of its
     * room type, about 800 open types by default. Past about 20
     * transactions in flight on a counter, more threads add aborts, not
     * commits, so the GPU runs 128 threads an SM instead of 256 (on an
     * H200, about as many commits, and half the aborts; docs/PERFORMANCE.md,
     * "Threads"). */
    .variants = {{.max_columns = PRSTM_MAX_COLUMNS,
                  .set_capacity = VACATION_CAPACITY,
                  .cpu_worker = vacation_cpu_worker,
                  PRSTM_GPU_HOOKS(vacation),
                  .gpu = {.threads_per_sm = 128}}},
    .init_state = vacation_init_state,
    .generate = vacation_generate,
    .check_invariant = vacation_check_invariant,
    .config_keys = 0,
    .nparams = VP_COUNT,
    .params = vacation_params,
};
