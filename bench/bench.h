/* bench.h: what the files of prstm-bench share: its options, a data point and the rows its runners measure, and the functions each file provides. */
#ifndef PRSTM_BENCH_H
#define PRSTM_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "ceiling.h"
#include "prstm_tx.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_INCOMPLETE = 3 };

/* The series of the sweeps, which --series selects from. */
#define SERIES_COUNT 26
extern const char *const series_names[SERIES_COUNT];

/* ---- Runners: the ways one point's batch is executed. ---- */

typedef enum runner_id {
  R_GPU_POSTPONE = 0,
  R_GPU_RETRY,
  R_GPU_CEILING,
  R_CPU_POSTPONE,
  R_CPU_RETRY,
  R_CPU_SERIAL,
  R_CPU_PLAIN,
  /* The engine with the delta path off (the STM alone) and on (wherever its
   * proof holds), beside the default (auto) of gpu_postpone and
   * cpu_postpone: the contention experiment's runners. */
  R_GPU_STM,
  R_GPU_DELTAS,
  R_CPU_STM,
  R_CPU_DELTAS,
  /* Co-execution (backend hetero): the CPU and the GPU together, or two
   * sets of CPU threads where no GPU is usable; the hetero experiment's. */
  R_HETERO,
  /* The same with engine.hetero_rounds: the two units share every batch in
   * rounds, even one the scheduler would give to one unit. */
  R_HETERO_ROUNDS,
  /* Several units (backend multi): the point's units GPUs, or sets of CPU
   * threads where no GPU is usable; the multigpu experiment's. */
  R_MULTI,
  R_COUNT
} runner_id;

extern const char *const runner_names[R_COUNT];
#define RUNNER_BIT(r) (1u << (r))
#define RUNNERS_ALL ((1u << R_COUNT) - 1)
#define RUNNERS_DELTAS \
  (RUNNER_BIT(R_GPU_STM) | RUNNER_BIT(R_GPU_DELTAS) | RUNNER_BIT(R_CPU_STM) | RUNNER_BIT(R_CPU_DELTAS))
/* What a point runs unless it asks for more: every runner but the delta
 * path's pairs, which only the contention experiment compares, and
 * co-execution and several units, which only the hetero and multigpu
 * experiments run. */
#define RUNNERS_DEFAULT \
  (RUNNERS_ALL & ~RUNNERS_DELTAS & ~RUNNER_BIT(R_HETERO) & ~RUNNER_BIT(R_HETERO_ROUNDS) & ~RUNNER_BIT(R_MULTI))
/* The ceiling and the plain loop execute bank rows only. */
#define RUNNERS_BANK_ONLY (RUNNER_BIT(R_GPU_CEILING) | RUNNER_BIT(R_CPU_PLAIN))
#define RUNNERS_GPU                                                                                           \
  (RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_GPU_RETRY) | RUNNER_BIT(R_GPU_CEILING) | RUNNER_BIT(R_GPU_STM) | \
   RUNNER_BIT(R_GPU_DELTAS))

typedef struct bench_opts {
  const char *out_dir;
  int quick;
  prstm_backend backend;
  unsigned repeat;
  double timeout_point_s;
  double max_time_s;
  uint64_t transactions;
  unsigned runners;
  uint32_t cpu_threads;
  uint64_t seed;
  int ceiling_direct; /* --ceiling-locks direct (default): one CAS per account, as the engine's direct path */
  unsigned series;    /* --series: bits of series_names; 0 runs every series */
} bench_opts;

typedef struct bench_ctx {
  bench_opts o;
  int gpu_ok;
  char gpu_why[256];
  long host_cores;
  double start;
  unsigned failures; /* rows failed, violated or timed out */
  unsigned skipped;  /* points left unrun by --max-time */
  char gpu_device[160];
  char meta_path[1200];
} bench_ctx;

typedef struct bench_point {
  const char *experiment;
  const char *series;
  const char *x_name;
  double x;
  const prstm_workload *wl;
  prstm_state_spec state;
  prstm_generate_spec gen;
  uint32_t
      gpu_threads; /* 0: each kernel's default (the engine: its worker variant's threads per SM; the ceiling: a full GPU) */
  uint32_t cpu_threads; /* threads of the CPU backend runners; 0: every host core */
  uint32_t lock_coverage;
  unsigned runners;
  int verify;          /* also run the first engine runner once with verification */
  uint64_t chunk_rows; /* the engine's options.chunk_rows: 0 the whole batch at once (unless it does not fit) */
  uint32_t units;      /* the multi runner's options.units */
  prstm_hetero_policy hetero_policy; /* the hetero runners' options.hetero_policy */
  uint64_t hetero_period;            /* the hetero runners' options.hetero_period (0: adaptive) */
} bench_point;

/* incomplete: retry mode gave up on transactions at its retry limit, so a
 * workload whose invariant needs every transaction (k-means against the
 * sequential result) cannot meet it; such a row is certified by a verified
 * re-run instead, and its throughput is not counted. */
typedef enum row_status {
  ROW_NOT_RUN = 0,
  ROW_OK,
  ROW_UNAVAILABLE,
  ROW_FAILED,
  ROW_TIMEOUT,
  ROW_SKIPPED,
  ROW_INCOMPLETE
} row_status;
extern const char *const row_status_names[];

typedef struct bench_row {
  row_status status;
  const char *backend;
  char device[160];
  uint32_t threads;
  uint64_t transactions, committed, abandoned, failed, aborts, postponements;
  unsigned rounds, repeats;
  double kernel_s, e2e_s; /* medians over the repeats */
  uint64_t gpu_bytes;
  double table_bytes_per_tx; /* < 0: not known */
  const char *invariant;     /* "ok", "violated" or "" */
  const char *outcomes;      /* "ok", "bad" or "" */
  char verify[16];           /* "ok", "failed" or "" */
  char note[512];
} bench_row;

/* ---- helpers (runners.c) ---- */
double bench_now(void);
/* CSV fields never hold a comma, a quote or a line break. */
void bench_csv_clean(char *s);
void row_note(bench_row *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- runners.c: one point, every runner ---- */
/* Runs every runner of the point on one batch and fills rows[R_COUNT]. */
void run_point(bench_ctx *c, const bench_point *p, FILE *csv, bench_row *rows);

/* ---- csv.c ---- */
extern const char bench_csv_header[];
double row_tx_s(const bench_row *r);
double row_e2e_tx_s(const bench_row *r);
void write_rows(FILE *f, const bench_point *p, bench_row *rows);

/* ---- experiments.c: the sweeps, as a table ---- */
/* The sizes of the points, --quick or full, and --transactions. */
typedef struct sizes {
  uint64_t bank_accounts, transactions, vacation_transactions, skiplist_transactions;
  double kmeans_points, graph_vertices, graph_edges;
} sizes;
sizes sizes_of(const bench_opts *o);
typedef struct bench_experiment {
  const char *name;
  int (*run)(bench_ctx *c);
} bench_experiment;
extern const bench_experiment bench_experiments[];
/* The ingest experiment (ingest.c), with a CSV of its own. */
int exp_ingest(bench_ctx *c);
extern const char ingest_csv_header[];
extern const unsigned bench_experiment_count;
/* The shapes of points the experiments and the targets share. */
FILE *bench_open_csv(const bench_ctx *c, const char *name);
/* Sets the workload's knob `name` in params; a name it lacks is an error
 * (printed), not a silent default. */
int bench_set_param(const prstm_workload *wl, double *params, const char *name, double v);
bench_point bank_point(const bench_ctx *c, const char *experiment, const char *series, uint64_t transactions,
                       double read_only);
uint32_t gpu_full_threads(const bench_ctx *c, const prstm_workload *wl);

/* ---- targets.c ---- */
int exp_targets(bench_ctx *c);

#endif /* PRSTM_BENCH_H */
