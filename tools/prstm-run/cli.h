/* cli.h: what the files of prstm-run share: its exit statuses, the one mapping from an error to a status, and the report of a run. */
#ifndef PRSTM_RUN_CLI_H
#define PRSTM_RUN_CLI_H

#include <stddef.h>

#include "prstm.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_INPUT = 2, EXIT_VERIFY = 3 };

/* Where an error happened: while loading the config, the state and the
 * batch, any failure but running out of memory is bad input (a file that
 * cannot be read is the user's to fix); while running, only the library's
 * input errors are. */
typedef enum cli_phase { CLI_LOADING, CLI_RUNNING } cli_phase;
/* The exit status of error code rc (never 0) in phase. */
int cli_exit_status(int rc, cli_phase phase);

/* ranks.c: where mpirun started prstm-run as several processes (ranks),
 * MPI is initialised before the run and finalised after it; rank 0 alone
 * prints and writes files. size is 1 for a process started alone. */
typedef struct cli_ranks {
  int rank, size;
  int mpi; /* MPI was initialised */
} cli_ranks;
int cli_ranks_start(cli_ranks *r);
/* Ends MPI; after an error (status not EXIT_OK) it ends every rank. */
void cli_ranks_end(const cli_ranks *r, int status);

double cli_now(void);
const char *cli_backend_name(prstm_backend b);
const char *cli_deltas_name(prstm_deltas_mode m);

/* What a run showed besides its results: times, rounds, the invariant's and
 * the certificate's verdicts. */
typedef struct run_report {
  double load_s, total_s;
  unsigned rounds;
  int invariant_ok;
  char invariant[512];
  int verified;
  prstm_verify_report verify;
} run_report;

/* results.c: the summary on stdout and the two output files. */
char *cli_results_json(const prstm_config *cfg, const prstm_engine *e, const prstm_batch *b, const prstm_results *r,
                       const run_report *rep);
char *cli_final_state_json(const prstm_config *cfg, const prstm_engine *e, size_t *len);
void cli_print_summary(const prstm_config *cfg, const prstm_results *r, const run_report *rep);
void cli_print_written(const char *what, const char *path);

/* progress_bar.c: the progress bar on a terminal. */
typedef struct progress_bar {
  int enabled;    /* stderr is a terminal and --quiet was not given */
  double start;   /* when the first round began (transfer and execution) */
  unsigned round; /* the round being run, shown when there are several */
  size_t drawn;   /* characters of the line now on the terminal, 0 when none */
} progress_bar;
/* The engine's progress observer (prstm_engine_set_progress). */
void progress_draw(const prstm_progress *p, void *user);
/* Erases the bar, if one is drawn. */
void progress_clear(progress_bar *bar);

#endif /* PRSTM_RUN_CLI_H */
