/* prstm.h: the one public header of prstm, a semantic-aware PR-STM transaction engine for GPUs and CPUs. */
#ifndef PRSTM_H
#define PRSTM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PRSTM_VERSION_MAJOR 0
#define PRSTM_VERSION_MINOR 1
#define PRSTM_VERSION_PATCH 0
#define PRSTM_VERSION_STRING "0.1.0"
/* Raised whenever a structure a workload shares with the engine changes
 * (prstm_workload, the specs, prstm_exec_ctx, the table view): a plugin
 * built against another ABI is refused instead of misread (CHANGELOG.md
 * lists the versions). A program that builds its own prstm_workload
 * (prstm_add_workload) is compiled against this header and needs no check;
 * it must be rebuilt with the library. */
#define PRSTM_ABI_VERSION 18

/* One table generates the error codes, their names and their messages, so the
 * three can never drift apart. Every function returns 0 or one of these. */
#define PRSTM_ERRNO_MAP(XX)                                               \
  XX(EINVAL, -1, "invalid argument")                                      \
  XX(ENOMEM, -2, "out of memory")                                         \
  XX(EIO, -3, "file could not be read or written")                        \
  XX(EPARSE, -4, "malformed JSON")                                        \
  XX(ECONFIG, -5, "invalid configuration or batch")                       \
  XX(ENOGPU, -6, "no usable GPU")                                         \
  XX(ECUDA, -7, "CUDA runtime error")                                     \
  XX(ETHREAD, -8, "thread could not be created")                          \
  XX(ETOOBIG, -9, "batch or state does not fit in memory")                \
  XX(EUNKNOWN, -10, "unknown workload or transaction type")               \
  XX(ESTALLED, -11, "the run made no progress within the watchdog limit") \
  XX(EPLUGIN, -12, "workload plugin could not be loaded")

enum {
#define PRSTM_ERRNO_ENUM(name, code, msg) PRSTM_##name = (code),
  PRSTM_ERRNO_MAP(PRSTM_ERRNO_ENUM)
#undef PRSTM_ERRNO_ENUM
};

/* Returns the message of an error code ("unknown error" for anything else). */
const char *prstm_strerror(int err);
/* Returns the name of an error code, such as "PRSTM_EPARSE". */
const char *prstm_err_name(int err);
/* True for errors caused by the caller's input (bad config, batch or arguments). */
int prstm_is_input_error(int err);

/* Shared data is an array of 64-bit words; transaction arguments are words too. */
typedef uint64_t prstm_word;

/* Final statuses of a transaction in the table; PENDING is the only non-final one. */
typedef enum prstm_status {
  PRSTM_PENDING = 0,
  PRSTM_COMMITTED = 1,
  PRSTM_ABANDONED = 2,
  PRSTM_FAILED = 3
} prstm_status;

/* Built-in failure reasons; a type's own reasons start at PRSTM_REASON_USER. */
enum {
  PRSTM_REASON_NONE = 0,
  PRSTM_REASON_CAPACITY = 1,    /* read or write set overflowed its fixed capacity */
  PRSTM_REASON_BAD_ADDRESS = 2, /* a consistent snapshot asked for a word out of range */
  PRSTM_REASON_RETRY_LIMIT = 3, /* retry mode gave up after retry_limit semantic retries */
  PRSTM_REASON_QUIESCENT = 4,   /* postponed, and no further commit could ever fund it */
  PRSTM_REASON_USER = 8
};
#define PRSTM_REASON_MAX 63

/* Kinds of transaction arguments; the loaders check values by kind. */
typedef enum prstm_arg_kind {
  PRSTM_ARG_ADDRESS = 1,     /* an index into the shared words, checked against the state */
  PRSTM_ARG_UINT = 2,        /* a non-negative integer */
  PRSTM_ARG_ADDRESS_LIST = 3 /* a JSON array of addresses; only as the last argument */
} prstm_arg_kind;

typedef struct prstm_arg_desc {
  const char *name;
  prstm_arg_kind kind;
} prstm_arg_desc;

#define PRSTM_MAX_TAG 15
/* The most executing threads of a run (a thread's rank fills 21 bits of a
 * lock word's owner field). */
#define PRSTM_MAX_THREADS 2097151u
#define PRSTM_MAX_ARGS 8
#define PRSTM_MAX_TYPES 64
#define PRSTM_MAX_COLUMNS 1024
#define PRSTM_MAX_PARAMS 16

#define PRSTM_MAX_DELTAS 4

/* prstm_workload.uses_add: how the type bodies add (prstm_add,
 * prstm_add_unread). */
#define PRSTM_ADDS_NONE 0
#define PRSTM_ADDS_COUNTED 1
#define PRSTM_ADDS_UNREAD_ONLY 2

/* prstm_delta_desc.flags: the step's amount is the amount argument times
 * the number of entries of the type's address list (a transfer from many
 * sources adds them all to its target in one write). */
#define PRSTM_DELTA_TIMES_LIST 1u
/* prstm_delta_desc.flags of a step over an address list: entry i's amount is
 * not the whole amount argument but its field i, `bits` bits wide (bits
 * i * bits up), whose low `amount_bits` bits are the amount. A field with a
 * higher bit set names something other than a step (a blind write, say), and
 * an entry whose field lies past the argument's 64 bits has none: a batch
 * with such a row runs through the STM. An amount of 0 is a read: the body
 * reads the word and leaves it as it is. 1 <= amount_bits <= bits <= 32. */
#define PRSTM_DELTA_FIELDS(bits, amount_bits) (2u | ((unsigned)(bits) << 8) | ((unsigned)(amount_bits) << 16))
/* prstm_delta_desc.flags: the step only reads its word (an amount of 0;
 * amount_arg is not read). A read-only type may declare steps, all of them
 * reads. */
#define PRSTM_DELTA_READ 4u
/* prstm_delta_desc.flags, on a step of a read-only type: the row's result
 * (prstm_set_result) is the sum, modulo 2^64, of the values every one of its
 * steps read. */
#define PRSTM_DELTA_RESULT_SUM 8u

/* One step of a type whose body only moves amounts between words: it reads
 * the word named by argument word_arg and writes it back with the amount of
 * argument amount_arg added (sign +1) or taken away (sign -1), postponing or
 * failing where the result would leave [0, 2^64). Where word_arg is an
 * address list, the step stands for one such step per entry of the list, in
 * list order, each with the whole amount or, with PRSTM_DELTA_FIELDS, its
 * own field of it. */
typedef struct prstm_delta_desc {
  unsigned word_arg;   /* the argument holding the word's address (or the list of them) */
  unsigned amount_arg; /* the argument holding the amount */
  int sign;            /* +1 adds the amount, -1 takes it away */
  unsigned flags;      /* 0, or PRSTM_DELTA_TIMES_LIST, PRSTM_DELTA_FIELDS(bits, amount_bits), PRSTM_DELTA_READ,
                          PRSTM_DELTA_RESULT_SUM */
} prstm_delta_desc;

/* The steps of one type (prstm_workload.steps). A type that declares steps
 * promises that, whenever every step stays in [0, 2^64), its body commits
 * having read each step's word once, in the order of the steps, and written
 * exactly these values, and nothing else. The engine may then run a batch of
 * such rows without the STM: it proves that the batch order commits every
 * row and applies the sums (docs/DESIGN-NOTES.md, "Hot spots"). --verify
 * replays the real bodies, so a declaration that breaks the promise is
 * caught. n = 0: the body is opaque and runs through the STM only. */
typedef struct prstm_type_steps {
  unsigned n;
  prstm_delta_desc step[PRSTM_MAX_DELTAS];
} prstm_type_steps;

/* A transaction type: its name, semantic tag (higher commits earlier), read-only
 * flag, argument layout and the strings of its own failure reasons. The body
 * itself is dispatched by the workload's instantiated workers (stm_core.h). */
typedef struct prstm_type_desc {
  const char *name;
  unsigned tag;
  int read_only;
  unsigned nargs;
  prstm_arg_desc args[PRSTM_MAX_ARGS];
  const char *reasons[4]; /* reasons PRSTM_REASON_USER + k, NULL-terminated */
} prstm_type_desc;

struct prstm_exec_ctx;
struct prstm_batch;
struct prstm_engine;

/* Knobs of a generated batch, as in the papers (config key batch.generate). */
typedef struct prstm_generate_spec {
  uint64_t transactions;
  uint64_t seed;
  unsigned nmix;
  const char *mix_names[PRSTM_MAX_TYPES];
  double mix_weights[PRSTM_MAX_TYPES];
  unsigned accounts_per_tx;
  uint64_t amount_min, amount_max;
  double read_only;                /* share of read-only transactions; < 0 when not given */
  double semantic_ratio;           /* share of transactions in a semantic dependency */
  int presorted;                   /* higher tags first in the table */
  double params[PRSTM_MAX_PARAMS]; /* the workload's own knobs of batch.generate */
  /* Threads that generate the batch (0: every core); the rows are the same
   * for every count. Every built-in generator honours it
   * (batch.generate.threads). */
  unsigned threads;
} prstm_generate_spec;

/* A workload's own configuration knob: a number under the config's `state`
 * or `batch.generate` object, checked against [min, max] by the loader and
 * handed to the workload's hooks in spec->params[index of the knob]. Values
 * are doubles, so whole numbers are exact up to 2^53. */
typedef enum prstm_param_section { PRSTM_PARAM_STATE = 0, PRSTM_PARAM_GENERATE = 1 } prstm_param_section;
typedef struct prstm_param_desc {
  const char *name;
  prstm_param_section section;
  double default_value, min, max;
  int integer; /* 1: the value must be a whole number */
  const char *help;
} prstm_param_desc;

/* Initial state of a workload (config key state). accounts and
 * initial_balance are the bank-style keys (PRSTM_KEYS_BANK); params holds
 * the workload's own knobs of the state section. */
typedef struct prstm_state_spec {
  uint64_t accounts;
  uint64_t initial_balance;
  double params[PRSTM_MAX_PARAMS];
} prstm_state_spec;

/* Host side of one worker instantiation, produced by PRSTM_CPU_WORKER /
 * PRSTM_GPU_WORKER (prstm_tx.h): the same bodies compiled for each substrate. */
typedef void (*prstm_cpu_worker_fn)(const struct prstm_exec_ctx *ctx, uint32_t rank);
/* `stream` is the CUDA stream (a cudaStream_t) the kernel is launched on;
 * NULL for the legacy default stream. */
typedef int (*prstm_gpu_launch_fn)(const struct prstm_exec_ctx *ctx, uint32_t threads, void *stream, char *err,
                                   size_t errlen);
typedef int (*prstm_gpu_max_threads_fn)(uint32_t *max_threads, char *err, size_t errlen);

/* How a worker variant runs on a GPU when the run leaves the thread count
 * to the engine (options.threads 0); an explicit count is never changed.
 * The kernel's fixed shape and the engine's other tuning constants are the
 * PRSTM_POLICY_* of stm_policy.h. */
typedef struct prstm_gpu_policy {
  /* Threads per SM; 0: PRSTM_POLICY_THREADS_PER_SM (256). Capped by what
   * the GPU keeps resident. */
  uint32_t threads_per_sm;
  /* The most threads worth launching: a variant whose every transaction
   * meets a few hot words (k-means' clusters) gains nothing from more, only
   * contention. 0: no limit. */
  uint32_t threads_max;
} prstm_gpu_policy;

typedef struct prstm_worker_variant {
  unsigned max_columns;  /* widest batch (argument columns) it serves */
  unsigned set_capacity; /* read, write and lock set entries per transaction */
  prstm_cpu_worker_fn cpu_worker;
  prstm_gpu_launch_fn gpu_launch; /* NULL when built without CUDA */
  prstm_gpu_max_threads_fn gpu_max_threads;
  prstm_gpu_policy gpu;
} prstm_worker_variant;

/* A workload: transaction types plus host hooks. Built-in workloads use exactly
 * this structure, so the user-facing path is the tested path. */
typedef struct prstm_workload {
  const char *name;
  unsigned ntypes;
  const prstm_type_desc *types;
  /* Worker instantiations, smallest first: the engine runs a batch on the
   * first variant whose max_columns covers the batch's argument columns, so a
   * batch of small transactions keeps its read and write sets small. */
  unsigned nvariants;
  prstm_worker_variant variants[4];
  /* Fills the initial words; may be NULL when the state is given directly. */
  int (*init_state)(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err, size_t errlen);
  /* Appends a generated batch; may be NULL when the workload has no generator. */
  int (*generate)(const prstm_generate_spec *spec, const prstm_state_spec *state, struct prstm_batch *batch, char *err,
                  size_t errlen);
  /* Checks the workload's invariant after a run; writes a one-line verdict. */
  int (*check_invariant)(const struct prstm_engine *engine, const struct prstm_batch *batch, int *ok, char *msg,
                         size_t msglen);
  /* Which built-in config keys the workload takes besides the common ones
   * (PRSTM_KEYS_*); its own knobs are declared in params. */
  unsigned config_keys;
  unsigned nparams;
  const prstm_param_desc *params;
  /* Multi-round workloads (propagation to a fixed point): called after round
   * `round` (0 for the configured batch) ran, appends the next round's
   * transactions to `next`, which is empty on entry; leaving it empty ends
   * the run. NULL for single-batch workloads. */
  int (*next_round)(const struct prstm_engine *engine, const struct prstm_batch *done, unsigned round,
                    struct prstm_batch *next, char *err, size_t errlen);
  /* The declared steps of each type, ntypes entries (prstm_type_steps), or
   * NULL when no type declares any. */
  const prstm_type_steps *steps;
  /* Whether type bodies add (PRSTM_ADDS_*). PRSTM_ADDS_COUNTED (1): some
   * body calls prstm_add; the engine keeps a counter of adds in flight per
   * lock (8 bytes a lock), and adds to a word that the adding transaction
   * neither reads nor writes run side by side instead of conflicting.
   * PRSTM_ADDS_UNREAD_ONLY (2): every add is prstm_add_unread; no counter
   * is kept and no commit checks one, and a prstm_add is a read and a
   * write. PRSTM_ADDS_NONE (0): every add is a read and a write. */
  int uses_add;
  /* Snapshot types, bit t for type t: read-only types whose rows read the
   * state a whole run starts from, on the host, and take the first places in
   * its commit order. A query over many words (the sum of every balance)
   * reads them without a read set, so it never conflicts and never starves,
   * and its result is that of a consistent state; on the GPU the host runs
   * these rows before the kernel runs the others. Their bodies must not
   * write or postpone. In a chunked run or a stream they run through the
   * STM like any other (docs/DESIGN-NOTES.md, "Snapshot queries"). */
  uint64_t snapshot_types;
  /* The words row `row` will write, as far as the host can tell before the
   * run: up to cap addresses into out, returning how many. The engine's
   * sample of a batch's hot words (--backend auto, the GPU's threads in
   * flight) reads these for a type whose words its body computes (a hash
   * table's set from a key); NULL, or 0 returned for a row, leaves the
   * sample the row's address arguments. An address or'ed with
   * PRSTM_ROW_WORD_AT_COMMIT is a word the row meets others on only at
   * commit (a ticket's counter, prstm_ticket): it aborts nobody, so
   * neither --backend auto nor the GPU's threads in flight weigh it (the
   * run's hot-word estimate counts it). One or'ed
   * with PRSTM_ROW_WORD_ADD is a word the row only adds to and no row
   * reads (prstm_add_unread), so it meets nobody: the sample leaves it
   * out, and only backends that route rows by their words (multi, hetero)
   * see it. The engine calls it for many rows at once, from several
   * threads: it must only read the engine and the batch. */
  unsigned (*row_words)(const struct prstm_engine *engine, const struct prstm_batch *batch, uint64_t row, uint64_t *out,
                        unsigned cap);
} prstm_workload;

/* The marks of a row_words address met only at commit, and of one the row
 * only adds to (above). */
#define PRSTM_ROW_WORD_AT_COMMIT (1ull << 63)
#define PRSTM_ROW_WORD_ADD (1ull << 62)

/* config_keys bits. PRSTM_KEYS_BANK: state.accounts (required),
 * state.initial_balance, batch.generate.accounts_per_tx and
 * batch.generate.amount {min, max}. */
#define PRSTM_KEYS_BANK 1u

/* Index of a workload's knob by name, or PRSTM_EUNKNOWN. */
int prstm_param_find(const prstm_workload *wl, const char *name);
/* Fill a spec with the defaults a config without the key would get: every
 * knob of the workload at its default; seed 1, accounts_per_tx 2, amounts
 * 1 to 100, no read-only share given, no semantic pairs, not presorted. */
void prstm_state_spec_init(const prstm_workload *wl, prstm_state_spec *spec);
void prstm_generate_spec_init(const prstm_workload *wl, prstm_generate_spec *spec);

/* Workloads compiled into the library: by name, or the i-th (NULL past the last). */
const prstm_workload *prstm_workload_find(const char *name);
const prstm_workload *prstm_workload_at(unsigned i);

/* A workload plugin: a shared module built with prstm_add_workload(... PLUGIN)
 * whose host file says PRSTM_PLUGIN(its workload) once. */
#if defined(__GNUC__)
#define PRSTM_EXPORT __attribute__((visibility("default")))
#else
#define PRSTM_EXPORT
#endif
#define PRSTM_PLUGIN(workload)                                              \
  PRSTM_EXPORT const unsigned prstm_plugin_abi_version = PRSTM_ABI_VERSION; \
  PRSTM_EXPORT const prstm_workload *prstm_plugin_workload(void) { return &(workload); }

typedef struct prstm_plugin prstm_plugin;
/* Loads a workload plugin; err says why not (missing file, not a prstm
 * plugin, built for another ABI). The workload stays valid until
 * prstm_plugin_close, which must come after every engine using it is gone. */
int prstm_plugin_open(const char *path, prstm_plugin **out, const prstm_workload **wl, char *err, size_t errlen);
void prstm_plugin_close(prstm_plugin *plugin);
extern const prstm_workload prstm_workload_bank;

/* Returns the index of a type by name in a workload, or PRSTM_EUNKNOWN. */
int prstm_type_find(const prstm_workload *wl, const char *name);

/* HETERO co-executes a whole batch on the CPU and the GPU (a second set of
 * CPU threads where no GPU is usable), each unit on a replica of the state,
 * reconciled after every round (docs/HETERO.md). MULTI runs a whole batch
 * on several GPUs (options.units; sets of CPU threads where no GPU is
 * usable), each owning a range of the locks, exchanging what they wrote
 * through NCCL (docs/MULTIGPU.md). Streams refuse both. */
typedef enum prstm_backend {
  PRSTM_BACKEND_AUTO = 0,
  PRSTM_BACKEND_GPU = 1,
  PRSTM_BACKEND_CPU = 2,
  PRSTM_BACKEND_HETERO = 3,
  PRSTM_BACKEND_MULTI = 4
} prstm_backend;

typedef enum prstm_semantic_mode {
  PRSTM_SEMANTIC_POSTPONE = 0, /* postpone and sweep again until quiescence */
  PRSTM_SEMANTIC_RETRY = 1     /* the papers' comparator: retry in place, give up after retry_limit */
} prstm_semantic_mode;

/* Whether a batch whose every row declares its steps (prstm_delta_desc) may
 * run as sums of its steps instead of through the STM, where the engine
 * proves that the batch order commits every row. AUTO: when a sample of the
 * batch shows hot words (the STM would meet conflicts); ON: whenever the
 * proof holds; OFF: never. A batch the proof refuses runs through the STM. */
typedef enum prstm_deltas_mode { PRSTM_DELTAS_AUTO = 0, PRSTM_DELTAS_ON = 1, PRSTM_DELTAS_OFF = 2 } prstm_deltas_mode;

/* How a run executed its batch. */
typedef enum prstm_path {
  PRSTM_PATH_STM = 0,   /* the PR-STM kernel or threads */
  PRSTM_PATH_DELTAS = 1 /* the proven batch order, applied as sums of declared steps */
} prstm_path;

/* Backend HETERO: whose part of a round is given up when the two units'
 * parts conflict in both orders (docs/HETERO.md, "Conflicts"). The part
 * given up runs again in a later round. */
typedef enum prstm_hetero_policy {
  PRSTM_HETERO_GPU_INVALIDATION = 0, /* the CPU's part is kept, the GPU's given up (default) */
  PRSTM_HETERO_FAVOUR_FASTEST = 1,   /* the part that decided more rows is kept */
  PRSTM_HETERO_BALANCED = 2          /* the units give up their parts in turn, so that neither starves */
} prstm_hetero_policy;

typedef struct prstm_options {
  prstm_backend backend;
  uint32_t threads;       /* 0: every host core (CPU), or on a GPU the worker variant's
                             gpu.threads_per_sm per SM (256 unless it says otherwise; 512 for
                             bank batches of rows of at most 3 words, that is without
                             transfer_multi) */
  uint32_t lock_coverage; /* consecutive words per lock, >= 1 */
  prstm_semantic_mode semantic;
  uint32_t retry_limit;
  int verify; /* record the commit order, so prstm_engine_verify can replay it */
  /* Seconds a run may go without any transaction committing or failing
   * before it is stopped with PRSTM_ESTALLED; 0 turns the watchdog off. */
  uint32_t watchdog_s;
  /* The most rows one execution takes: a longer batch runs in chunks of
   * this many, and a stream's units are no longer, with postponed rows
   * carried from chunk to chunk (docs/STREAMS.md). 0: chunks only when a
   * batch's table does not fit the GPU's memory. A chunked run has one
   * commit order across its chunks and is verified like any other. */
  uint64_t chunk_rows;
  prstm_deltas_mode deltas;
  /* Backend MULTI: the units to run on, 0 for every GPU of the host (two
   * sets of CPU threads where no GPU is usable). */
  uint32_t units;
  /* Backend HETERO: 1 makes the two units share every batch in rounds, even
   * one the scheduler would give whole to the faster unit (to measure
   * co-execution itself); 0 (default) lets the scheduler choose
   * (docs/HETERO.md). */
  int hetero_rounds;
  /* Backend HETERO: whose part is given up on a conflict (default
   * PRSTM_HETERO_GPU_INVALIDATION). */
  prstm_hetero_policy hetero_policy;
  /* Backend HETERO: the rows of every round, that is how often the units
   * synchronise (at most 8M rows, the batch or the GPU's slots); 0
   * (default) lets the period adapt to the conflicts (docs/HETERO.md,
   * "What adapts"). */
  uint64_t hetero_period;
  /* Backend MULTI: 1 partitions the state among the units, so that each
   * GPU holds only its range of the words (a state up to the units' memory
   * together, not one GPU's), and the host's cores run the rows that span
   * ranges; 0 (default): every unit holds a replica of the whole state
   * (docs/MULTIGPU.md). */
  int partition_state;
} prstm_options;

/* The most threads the CPU backend starts on this machine: 64 a core, and
 * at least 1,024 (more only time-slice the same cores; a run asking for more
 * is refused with PRSTM_EINVAL before any thread starts). */
uint32_t prstm_cpu_threads_max(void);

/* Sets the defaults: auto backend, automatic threads, lock_coverage 1,
 * postpone, retry_limit 100, no verification, watchdog 60 s, and
 * chunk_rows from the environment variable PRSTM_CHUNK_ROWS when it holds a
 * whole number (else 0), so that any program can be made to run chunked. */
void prstm_options_init(prstm_options *opt);

/* Counts and times of one run. Times are in seconds. */
typedef struct prstm_results {
  uint64_t transactions, committed, abandoned, failed;
  uint64_t aborts;        /* concurrent conflicts: attempts retried */
  uint64_t postponements; /* semantic conflicts met */
  uint64_t sweeps;        /* block sweeps summed over threads */
  double transfer_s, execute_s;
  double wall_s; /* the whole of prstm_engine_run: set-up, transfer, execution, readback */
  prstm_backend backend;
  uint32_t threads;
  uint32_t lock_coverage;
  uint64_t gpu_bytes; /* device memory used by the run, 0 on the CPU */
  char device[128];
  char fallback[256]; /* why auto chose the CPU (no usable GPU, or a batch it runs faster), empty otherwise */
  prstm_path path;
  /* Conflicts a transaction would meet in the STM on average, estimated from
   * a sample of the batch (deltas AUTO and ON); 0 when not estimated. */
  double hot_estimate;
  /* Rows of snapshot types the host ran before the run (each committed on
   * the starting state), and the seconds that took; 0 and 0 without any. */
  uint64_t snapshot_rows;
  double snapshot_s;
  /* A co-executed run (PRSTM_BACKEND_HETERO): its rounds, the rows the
   * second unit (the GPU) decided and kept, and the rows of the parts
   * either unit gave up to a conflict with the other's part, which ran
   * again in a later round; first_unit_discarded_rows counts those of the
   * first unit (the CPU), and reordered_rounds the rounds kept whole in
   * the order GPU then CPU because the order CPU then GPU did not hold
   * (docs/HETERO.md, "Conflicts"); 0 in every other run. */
  uint64_t rounds, second_unit_rows, discarded_rows, first_unit_discarded_rows, reordered_rounds;
  /* Backend HETERO: the rounds in which the first unit's part was stopped
   * at PRSTM_HETERO_STOP_RATIO times the second unit's time, its rows not
   * yet decided left for a later round (docs/HETERO.md); 0 elsewhere. */
  uint64_t stopped_rounds;
  /* A co-executed run that the scheduler gave whole to one unit, the
   * faster by far (docs/HETERO.md): PRSTM_BACKEND_CPU or PRSTM_BACKEND_GPU,
   * and why; PRSTM_BACKEND_AUTO and empty where the units shared it, or
   * where it ran on the delta path (path says so). */
  prstm_backend alone;
  char alone_why[256];
  /* A multi-unit run (PRSTM_BACKEND_MULTI): its units, and the rows it
   * decided on its first unit because their words span several units'
   * ranges (or the host cannot see them); rounds counts its rounds. */
  uint32_t units;
  uint64_t cross_rows;
  /* A partitioned state (options.partition_state): 1 where the units held
   * their ranges alone (0 where the state has fewer locks than units, and
   * every unit held a replica, which fallback says), and the rows a unit
   * sent to the host because they touched a word it does not hold (their
   * arguments did not name every word they touch), counted in cross_rows
   * too. */
  uint32_t state_partitioned;
  uint64_t away_rows;
  /* A chunked run (options.chunk_rows, or a batch too large for the GPU):
   * the part of wall_s its stream spent on its set-up
   * (prstm_stream_results.setup_s: on a GPU, taking the state there at the
   * open and giving it back at the close; on the CPU, the stream's own
   * allocations), so that wall_s - setup_s is the chunks' own time with
   * the state resident; 0 for every other run. */
  double setup_s;
} prstm_results;

/* The engine: a workload, its shared state and options. Not thread-safe; one
 * engine per thread of the caller. */
typedef struct prstm_engine prstm_engine;

int prstm_engine_create(prstm_engine **out, const prstm_workload *wl, const prstm_options *opt);
void prstm_engine_destroy(prstm_engine *engine);
/* The message of the last error this engine returned, or "". */
const char *prstm_engine_error(const prstm_engine *engine);
const prstm_workload *prstm_engine_workload(const prstm_engine *engine);
const prstm_options *prstm_engine_options(const prstm_engine *engine);
/* Starts ahead of time what the engine's first run would start first: the
 * context of each GPU its backend may use (the device current on the calling
 * thread, device 0 on a thread that set none; every GPU for backend multi),
 * with each worker variant's GPU kernel loaded, and for backends gpu and
 * auto the two pinned chunks of 32 MiB that a whole run's copies and a
 * stream's state go through, and the CUDA streams and events a stream
 * borrows (kept until the engine is destroyed); nothing for the CPU
 * backend or where no GPU is usable. Unlike every other call on an engine,
 * it may run on a thread of its own while the engine's thread loads a
 * batch or initialises the state, since it reads only the options and the
 * workload and writes only those chunks and handles, which no call but a
 * run or a stream uses: that hides the GPU's start-up behind the loading. It must
 * have returned before the engine's first run or stream. Returns 0, or
 * PRSTM_ECUDA where a GPU fails to start, which the run then reports with
 * its message. */
int prstm_engine_warm_up(prstm_engine *engine);
/* Sets the shared words (copied); prstm_engine_state_spec is NULL after it. */
int prstm_engine_set_state(prstm_engine *engine, const prstm_word *words, uint64_t nwords);
/* Sets the shared words through the workload's init_state hook. */
int prstm_engine_init_state(prstm_engine *engine, const prstm_state_spec *spec);
/* The current shared words (valid until the next run or destroy). */
const prstm_word *prstm_engine_state(const prstm_engine *engine, uint64_t *nwords);
/* The state spec last given to prstm_engine_init_state, or NULL. */
const prstm_state_spec *prstm_engine_state_spec(const prstm_engine *engine);
/* Runs every transaction of the batch until each is final. A batch whose
 * table does not fit the GPU's memory (or longer than options.chunk_rows)
 * runs in chunks, with postponed transactions carried from chunk to chunk
 * (docs/STREAMS.md). A chunked run is serializable like any other, and
 * abandons a transaction only when nothing left in the batch can fund it;
 * it may commit other transactions than an unchunked run, since its serial
 * order differs (a withdrawal may find its funds taken by a later chunk's
 * earlier-ordered rows, or given by them). */
int prstm_engine_run(prstm_engine *engine, struct prstm_batch *batch, prstm_results *res);
/* Called by prstm_engine_run_rounds after each round ran, with the round's
 * batch (its outcomes) and results, before the next round replaces it:
 * verify it, check it, report it. Return 0 to go on, or a code that stops
 * the rounds and is returned. */
typedef int (*prstm_round_fn)(unsigned round, struct prstm_batch *batch, const prstm_results *results, void *user);
/* Runs *batch, then each round the workload's next_round makes of the last
 * one, until it makes an empty one: the one driver of a multi-round
 * workload (a single-round workload runs once). *total gets the first
 * round's results with every later round's added (prstm_results_add), and
 * *rounds (may be NULL) the rounds that ran. On return *batch is the last
 * round's batch: the caller's own when there was one round, else a batch
 * the driver made, which the caller destroys besides its own. Returns the
 * first error (a run's, the callback's, or PRSTM_ECONFIG and the engine's
 * message when next_round failed). */
int prstm_engine_run_rounds(prstm_engine *engine, struct prstm_batch **batch, prstm_round_fn each, void *user,
                            prstm_results *total, unsigned *rounds);
/* Adds one run's counts and times to `total` (rounds of a multi-round
 * workload, repeated runs): counts and transfer, execute, wall and set-up
 * times add up,
 * gpu_bytes keeps the largest; the backend, device, thread count and
 * fallback stay those of `total`, so start it as a copy of the first run. */
void prstm_results_add(prstm_results *total, const prstm_results *run);

/* Live counts of a running batch, read from what the executing threads (CPU
 * threads or the GPU kernel) publish as they go, never estimated. Threads
 * publish in batches (PRSTM_POLICY_PROGRESS_BATCH decisions, or every
 * PRSTM_POLICY_PROGRESS_NS), so a report lags the run by at most that much. */
typedef struct prstm_progress {
  uint64_t transactions; /* rows of the batch being run */
  uint64_t committed;
  uint64_t decided;   /* committed plus failed */
  uint64_t abandoned; /* so far; in postpone mode only at the end of the run */
  uint64_t pending;   /* transactions - decided - abandoned */
  double elapsed_s;   /* since execution started (after the transfer on the GPU) */
  int finished;       /* 1 in the last report, whose counts equal the run's results */
} prstm_progress;

/* A progress observer. It runs on the thread that called prstm_engine_run,
 * while that thread waits on the run, so it must return quickly and must not
 * call into the same engine. */
typedef void (*prstm_progress_fn)(const prstm_progress *progress, void *user);

/* How often, at most, prstm_engine_run reports progress while it executes. */
#define PRSTM_PROGRESS_INTERVAL_MS 100

/* Sets the engine's progress observer (fn NULL removes it). Each later run
 * calls fn about every PRSTM_PROGRESS_INTERVAL_MS during execution, on both
 * backends; counts never decrease from one report to the next, and a run
 * that completes ends with one report marked finished. A run that fails
 * (the watchdog, a CUDA error) gets no finished report. */
int prstm_engine_set_progress(prstm_engine *engine, prstm_progress_fn fn, void *user);
/* The verification certificate of a run made with options.verify: the
 * committed and failed transactions replayed serially on the CPU, in the
 * recorded commit order, from the initial state. ok is 1 when no
 * transaction is left pending, every committed and failed one holds a
 * place of its own in the commit order, the statuses add up to the
 * decisions the run counted, the final state and every outcome, result and
 * hash of the values each transaction read match, and (postpone mode)
 * every abandoned transaction is still blocked on the final state. */
typedef struct prstm_verify_report {
  int ok;
  uint64_t replayed;         /* transactions replayed in commit order */
  uint64_t checked_blocked;  /* abandoned transactions re-run on the final state */
  int64_t first_transaction; /* first row whose outcome differs (its row in its batch), or -1 */
  int64_t first_batch;       /* streams: the number of that row's batch, else -1 */
  int64_t first_word;        /* first word whose final value differs, or -1 */
  double replay_s;
  char message[512];
} prstm_verify_report;

/* Checks the last run of this engine on this batch, chunked or not. Returns
 * 0 when the check ran (report->ok gives the verdict), PRSTM_EINVAL when the
 * run was not made with verify. */
int prstm_engine_verify(prstm_engine *engine, const struct prstm_batch *batch, prstm_verify_report *report);
/* Runs the workload's invariant check (its check_invariant hook, as
 * prstm-run does after each run) on the engine's current state and the
 * outcomes of `batch`. Returns 0 when the check ran: *ok gives the verdict
 * and msg a one-line account; PRSTM_EINVAL (msg says why, *ok is 0) for a
 * batch of another workload, an engine without state or a workload without
 * a check. */
int prstm_engine_check_invariant(const prstm_engine *engine, const struct prstm_batch *batch, int *ok, char *msg,
                                 size_t msglen);

/* Whether this build has CUDA and a usable GPU; writes why not otherwise. */
int prstm_gpu_available(const prstm_workload *wl, char *why, size_t whylen);

/* A batch: the global transaction table, built in host memory. */
typedef struct prstm_batch prstm_batch;

int prstm_batch_create(prstm_batch **out, const prstm_workload *wl);
/* A batch whose columns live in page-locked (pinned) host memory where this
 * build has CUDA and the CUDA runtime gives pinned memory (a GPU and its
 * driver are present); elsewhere, or when pinned memory runs out, an
 * ordinary batch. The GPU backend then copies it at the link's full rate,
 * and a stream copies its rows straight to the device when the batch has
 * the stream's width (as many argument columns as the stream's first batch
 * or its workload's widest fixed type: 3 for the bank), where an ordinary
 * batch goes through a staging copy on the host (docs/STREAMS.md). Pinned
 * memory is slow to allocate and to free, and both wait for the GPU:
 * reserve the batch's size up front (and widen it, prstm_batch_widen, where
 * a value may need more than 32 bits), reuse the batch
 * (prstm_batch_clear), and do not grow, widen, create or destroy pinned
 * batches while a stream runs (not even in its done report). */
int prstm_batch_create_pinned(prstm_batch **out, const prstm_workload *wl);
/* 1 when the batch's columns are in pinned memory now, else 0. */
int prstm_batch_pinned(const prstm_batch *batch);
/* Makes room for `rows` transactions of up to `ncols` argument words, so
 * that appends up to that size do not reallocate (but for the one widening
 * below). Columns count like those of appended rows: reserving more than
 * the batch's rows need selects a wider worker variant (larger sets) for
 * it. */
int prstm_batch_reserve(prstm_batch *batch, uint64_t rows, unsigned ncols);
/* A batch keeps its argument columns as 32-bit values while every value
 * fits, which halves the bytes to fill and to copy to a GPU, and widens
 * them to 64 bits, once and for good, when a wider value arrives: that
 * append reallocates the columns. prstm_batch_widen does it now, so that a
 * batch whose values may need 64 bits (a pinned batch above all, whose
 * reallocation waits for the GPU) never reallocates in an append. */
int prstm_batch_widen(prstm_batch *batch);
/* Empties the batch (no rows, no outcomes) and keeps its memory, pinned or
 * not, and its columns, so that it can be filled and run again without an
 * allocation. A batch in a stream may be cleared once it is reported done. */
int prstm_batch_clear(prstm_batch *batch);
void prstm_batch_destroy(prstm_batch *batch);
/* Appends one transaction of type index `type`; args hold the fixed arguments
 * in order, an address list being its count followed by its entries. */
int prstm_batch_append(prstm_batch *batch, unsigned type, const prstm_word *args, unsigned nargs);
/* Appends one transaction of the type named `type`, arguments laid out as
 * for prstm_batch_append, and checks the number of words against the type's
 * declared arguments. Returns PRSTM_EUNKNOWN for a type the workload lacks,
 * PRSTM_EINVAL for a wrong number of words or an empty address list.
 * Addresses are not checked against the state, which the batch does not
 * know: a body that reads a word out of range fails with
 * PRSTM_REASON_BAD_ADDRESS. */
int prstm_batch_append_named(prstm_batch *batch, const char *type, const prstm_word *args, unsigned nargs);
/* Appends every row of `src` (a batch of the same workload) to `batch`, in
 * order, as pending transactions: the way to join batches built apart,
 * such as the parts of a file parsed on several threads. */
int prstm_batch_append_rows(prstm_batch *batch, const prstm_batch *src);
/* One argument column of prstm_batch_append_columns: a value a row, each
 * `width` bytes (1, 2, 4 or 8), an unsigned integer in the host's byte
 * order. */
typedef struct prstm_column {
  const void *data;
  unsigned width;
} prstm_column;
/* Appends n rows given as columns: types[i] is row i's type index and
 * cols[c] holds argument word c of every row (ncols columns; a row's words
 * past them are 0). Refuses, appending nothing, a type index the workload
 * does not have or a column of another width; like prstm_batch_append it
 * checks no address. The way to take a columnar batch from another program
 * without a call a row. */
int prstm_batch_append_columns(prstm_batch *batch, uint64_t n, const uint8_t *types, const prstm_column *cols,
                               unsigned ncols);
/* Why the batch's last refused append (prstm_batch_append or
 * prstm_batch_append_named) was refused, in one line, e.g. "type deposit
 * takes 2 argument words, got 3"; an empty string before any refusal. */
const char *prstm_batch_error(const prstm_batch *batch);
uint64_t prstm_batch_size(const prstm_batch *batch);
const prstm_workload *prstm_batch_workload(const prstm_batch *batch);
/* Reorders the table stably so that higher semantic tags come first. */
int prstm_batch_presort(prstm_batch *batch);
/* Outcome of transaction i after a run: status, reason and the read-only result. */
int prstm_batch_outcome(const prstm_batch *batch, uint64_t i, prstm_status *status, unsigned *reason,
                        prstm_word *result);
unsigned prstm_batch_type(const prstm_batch *batch, uint64_t i);
prstm_word prstm_batch_arg(const prstm_batch *batch, uint64_t i, unsigned col);
/* The number of argument columns, and column col's words of every row (in
 * row order, prstm_batch_size of them; NULL past the columns, or where
 * memory runs out). A batch whose columns are 32-bit (prstm_batch_widen)
 * is widened first, for good, so this call changes such a batch: it must
 * not run beside any other call on the batch, and a wide batch goes to a
 * GPU at 8 bytes a value where it has to be narrowed on the way. Prefer
 * prstm_batch_arg to read values. The pointer holds until the next
 * append, clear or presort. */
unsigned prstm_batch_columns(const prstm_batch *batch);
const prstm_word *prstm_batch_column(const prstm_batch *batch, unsigned col);
/* Describes a reason code of a type ("capacity", "insufficient funds"...). */
const char *prstm_reason_string(const prstm_workload *wl, unsigned type, unsigned reason);
/* Names a status: "pending", "committed", "abandoned" or "failed" ("unknown status" otherwise). */
const char *prstm_status_name(prstm_status status);

/* Streams of batches (docs/STREAMS.md). Batches are submitted one after
 * another and run in order on the engine's state. On the GPU the copy of
 * the next batch to the device overlaps the execution of the current one
 * (pinned staging, two device tables), and the state and locks stay on the
 * device until the stream is closed. A transaction still postponed at the
 * end of its batch is carried over to a later one, and is abandoned
 * (PRSTM_REASON_QUIESCENT) only when the stream is closed and no remaining
 * transaction can fund it. prstm_row numbers the rows of the stream's
 * batches one after another. On an engine with options.verify the stream
 * records one commit order across all its batches and a copy of every
 * finished batch, which prstm_stream_verify checks after the close. */
typedef struct prstm_stream prstm_stream;

/* Totals of a stream, filled by prstm_stream_close. Times are in seconds:
 * copy_s is the host-to-device copying (GPU) or the staging of rows into
 * the working table (CPU), execute_s the execution, wall_s the stream's
 * life from open to the end of close. */
typedef struct prstm_stream_results {
  uint64_t batches;      /* batches submitted */
  uint64_t transactions; /* rows of every submitted batch */
  uint64_t committed, abandoned, failed;
  uint64_t carried;    /* transactions still pending at the end of the run they entered in */
  uint64_t carry_runs; /* runs of carried transactions, summed: one carried twice counts 2 */
  uint64_t runs;       /* executions (kernel launches or CPU runs), chunks and the close included */
  uint64_t aborts, postponements, sweeps;
  double copy_s, execute_s, wall_s;
  double setup_s; /* part of wall_s: the GPU taking the state at the first batch and giving it back at close */
  prstm_backend backend;
  uint32_t threads;
  uint64_t unit_rows; /* most new rows one execution takes; a larger batch is split into chunks;
                           UINT64_MAX: no limit (the CPU backend without options.chunk_rows) */
  uint64_t gpu_bytes; /* device memory the stream holds, 0 on the CPU */
  char device[128];
  char fallback[256]; /* why auto chose the CPU, empty otherwise */
} prstm_stream_results;

/* Called when every transaction of the batch submitted as number `index`
 * (0 for the first) is final: its outcomes are in the batch
 * (prstm_batch_outcome), and the stream will not touch it again, so the
 * caller may read, reuse or destroy it. Called on the caller's thread from
 * inside prstm_stream_submit or prstm_stream_close, in the order batches
 * finish, which is not always the order they were submitted in (a carried
 * transaction holds its batch back). It must not call into the stream:
 * prstm_stream_submit, prstm_stream_close and prstm_stream_set_done return
 * PRSTM_EINVAL there (the stream goes on), and it must not destroy the
 * stream. */
typedef void (*prstm_stream_done_fn)(uint64_t index, prstm_batch *batch, void *user);

/* Opens a stream on an engine that has its state. While it is open the
 * engine runs nothing else (prstm_engine_run and prstm_engine_set_state
 * return PRSTM_EINVAL) and its state is that of the stream, brought back by
 * prstm_stream_close. The backend is chosen here as prstm_engine_run does. */
int prstm_stream_open(prstm_engine *engine, prstm_stream **out);
/* Sets the observer of finished batches (fn NULL removes it). */
int prstm_stream_set_done(prstm_stream *stream, prstm_stream_done_fn fn, void *user);
/* Queues a batch of the engine's workload and returns once it is queued.
 * The batch is borrowed, not copied: the stream writes its outcomes into it,
 * and the caller must leave it alone until the done observer reports it or
 * the stream is closed. It may block while two to eight batches are in
 * flight. A
 * stream's row width (argument words) is set by its first batch, at least
 * that of the workload's widest fixed-argument type; a wider batch later is
 * refused with PRSTM_EINVAL. Returns PRSTM_EINVAL after close, or the error
 * that stopped the stream (a CUDA error, the watchdog), which is sticky. */
int prstm_stream_submit(prstm_stream *stream, prstm_batch *batch);
/* Runs everything that remains, carried transactions included, abandons
 * only what nothing left can fund, brings the final state back to the
 * engine, reports every unfinished batch done, and fills *out (may be
 * NULL). The engine is free again afterwards. A second close returns
 * PRSTM_EINVAL. */
int prstm_stream_close(prstm_stream *stream, prstm_stream_results *out);
/* Frees the stream; the engine stays (destroy it separately) and may open
 * another. A stream that was not closed is
 * discarded: runs already started finish and their state is brought back to
 * the engine (unless a CUDA error stopped the stream), and every transaction
 * not yet final stays pending. After an error, destroy the stream before its
 * batches: a GPU unit still in flight may write outcomes into a pinned batch
 * until this call has stopped it. */
void prstm_stream_destroy(prstm_stream *stream);
/* The certificate of a verified stream (an engine with options.verify),
 * after a close that succeeded and before anything else changes the
 * engine's state: every transaction of every batch replayed serially in the
 * stream's commit order from the state at open, and checked against the
 * engine's state as prstm_engine_verify checks a run; report->first_batch
 * names the batch of a row that differs. It checks what the stream
 * recorded, not the batches, which the caller may have reused. Returns
 * PRSTM_EINVAL for a stream without verify or not closed. */
int prstm_stream_verify(prstm_stream *stream, prstm_verify_report *report);
/* The message of the stream's last error (the engine's), or "". */
const char *prstm_stream_error(const prstm_stream *stream);

/* A parsed JSON config (loaders/). Paths are as written or resolved against
 * the config file's folder (batch.file). */
typedef struct prstm_config {
  char path[1024];
  const prstm_workload *workload;
  prstm_options options;
  prstm_state_spec state;
  enum { PRSTM_BATCH_INLINE, PRSTM_BATCH_FILE, PRSTM_BATCH_GENERATE } batch_kind;
  char batch_file[1024];
  prstm_generate_spec generate;
  char results_path[1024];
  char final_state_path[1024];
  char plugin_path[1024]; /* "plugin", resolved against the config's folder; "" for built-ins */
  prstm_plugin *plugin;   /* the loaded plugin, owned: closed by prstm_config_free */
  void *inline_json;      /* the parsed batch.transactions array, owned */
} prstm_config;

/* Parses and checks a config file; err gets "FILE: problem" on failure. */
int prstm_config_load(const char *path, prstm_config *cfg, char *err, size_t errlen);
void prstm_config_free(prstm_config *cfg);
/* Fills a batch from the config's batch section (inline, file or generate). */
int prstm_config_load_batch(const prstm_config *cfg, uint64_t nwords, prstm_batch *batch, char *err, size_t errlen);
/* Appends the transactions of a JSON Lines file (one object per line). */
int prstm_load_jsonl(const char *path, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch, char *err,
                     size_t errlen);
/* Appends the rows of a binary batch: a folder holding batch.json (format
 * "prstm-batch", version 1, the workload, rows, columns and the names of the
 * types by index) and NumPy .npy columns type.npy (uint8) and arg0.npy ...
 * (unsigned integers of 1, 2, 4 or 8 bytes). Checked as the JSON Lines
 * loader checks rows; a refused folder appends nothing. */
int prstm_load_batch_dir(const char *dir, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch, char *err,
                         size_t errlen);
/* Writes the batch's rows as such a folder (created where missing; its
 * files replaced), each argument column in the narrowest width that holds
 * it, batch.json last. */
int prstm_save_batch_dir(const char *dir, const prstm_batch *batch, char *err, size_t errlen);
/* Writes every transaction's outcome after a run: to a path ending in
 * .jsonl, one line a row, {"index", "status", "reason", "result"} (the
 * status's and the reason's names); to any other path, a folder (created
 * where missing) of .npy columns status.npy (uint8, prstm_status),
 * reason.npy (uint8) and result.npy (uint64), row i at index i, and an
 * outcomes.json written last. */
int prstm_save_outcomes(const char *path, const prstm_batch *batch, char *err, size_t errlen);
/* Writes text to path atomically: a temporary file in the same folder, then rename. */
int prstm_write_file_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* PRSTM_H */
