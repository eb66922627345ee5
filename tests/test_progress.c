/* test_progress.c: the progress observer of the engine, and prstm-run's progress bar as seen through a pseudo-terminal. */
/* posix_openpt, grantpt, ptsname and kill are POSIX; ask for them explicitly under -std=c11. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "prstm.h"
#include "test_backend.h"
#include "test_child.h"
#include "test_paths.h"
#include "test_workload.h"

/* A reverse chain of transfers: transfer k moves the money from account k to
 * account k+1, the rows hold them last link first, and one deposit funds
 * link 0. In postpone mode each sweep can commit only the next link, so the
 * run costs about CHAIN_LINKS^2 / 4 postponements: a batch of a few MiB that
 * executes for seconds on two CPU threads (about 3 s for 50,000 links on a
 * 2.6 GHz core), long enough for the bar, which waits one second. */
#define CHAIN_LINKS 50000
/* The observer test only needs a few reports, 100 ms apart. */
#define SHORT_CHAIN_LINKS 25000
/* Below this, a run's silence would prove nothing: a bar would not be due yet. */
#define BAR_DUE_S 1.2
/* A run that takes longer than this is hung; it is killed and the test fails. */
#define RUN_LIMIT_S 120

/* Each test runs in its own process, so these belong to one test. */
static char workdir[PATH_MAX];
static char program[PATH_MAX];

/* The child runs in the temporary folder, so the program needs an absolute path. */
static void setup(void) {
  cr_assert_not_null(realpath(test_run_path(), program), "cannot find prstm-run at '%s': %s", test_run_path(),
                     strerror(errno));
  test_make_scratch(workdir, sizeof workdir, "prstm-progress");
}

static void teardown(void) {
  if (workdir[0] != '\0') test_remove_tree(workdir);
}

TestSuite(progress, .init = setup, .fini = teardown);

static const char *work_path(const char *name) { return test_path(workdir, name); }

/* Writes chain.json and its JSON Lines batch chain.jsonl into the working
 * folder: links transfers in reverse order, funded by one deposit. */
static void write_chain_config(unsigned links) {
  FILE *f = fopen(work_path("chain.jsonl"), "w");
  cr_assert_not_null(f, "cannot write chain.jsonl: %s", strerror(errno));
  fprintf(f, "{\"type\": \"deposit\", \"account\": 0, \"amount\": 10}\n");
  for (unsigned k = links; k-- > 0;)
    fprintf(f, "{\"type\": \"transfer\", \"from\": %u, \"to\": %u, \"amount\": 10}\n", k, k + 1);
  cr_assert_eq(fclose(f), 0);
  f = fopen(work_path("chain.json"), "w");
  cr_assert_not_null(f, "cannot write chain.json: %s", strerror(errno));
  fprintf(f,
          "{\"workload\": \"bank\", \"engine\": {\"backend\": \"cpu\", \"threads\": 2},\n"
          " \"state\": {\"accounts\": %u, \"initial_balance\": 0},\n"
          " \"batch\": {\"file\": \"chain.jsonl\"},\n"
          " \"output\": {\"results\": \"results.json\"}}\n",
          links + 1);
  cr_assert_eq(fclose(f), 0);
}

/* What one run of prstm-run showed. */
typedef struct tty_run {
  int status;
  char *terminal; /* everything written to the terminal, NUL-terminated */
  char *pipe;     /* what stderr wrote into a pipe, when it was one */
  size_t terminal_len;
  double first_bar_s; /* when a bar first reached the terminal, in seconds after the start; -1 if never */
} tty_run;

/* Appends what fd has to read to a growing buffer; returns 0 at its end. */
static int drain(int fd, char **buf, size_t *len, size_t *cap) {
  char chunk[4096];
  ssize_t got = read(fd, chunk, sizeof chunk);
  if (got <= 0) return 0; /* EOF, or EIO once the terminal's last user is gone */
  if (*len + (size_t)got + 1 > *cap) {
    while (*len + (size_t)got + 1 > *cap) *cap *= 2;
    *buf = realloc(*buf, *cap);
    cr_assert_not_null(*buf);
  }
  memcpy(*buf + *len, chunk, (size_t)got);
  *len += (size_t)got;
  (*buf)[*len] = 0;
  return 1;
}

/* Runs prstm-run chain.json with extra options (NULL-terminated) in the
 * working folder, its stdin, stdout and stderr on a new pseudo-terminal of
 * 120 columns, or its stderr on a pipe when stderr_pipe is set. */
static tty_run run_on_terminal(const char *const *options, int stderr_pipe) {
  char *argv[16];
  unsigned n = 0;
  argv[n++] = program;
  argv[n++] = "chain.json";
  for (const char *const *o = options; *o; o++) argv[n++] = (char *)*o;
  argv[n] = NULL;

  int master = posix_openpt(O_RDWR | O_NOCTTY);
  cr_assert_geq(master, 0, "posix_openpt: %s", strerror(errno));
  cr_assert_eq(grantpt(master), 0, "grantpt: %s", strerror(errno));
  cr_assert_eq(unlockpt(master), 0, "unlockpt: %s", strerror(errno));
  char slave_name[PATH_MAX];
  snprintf(slave_name, sizeof slave_name, "%s", ptsname(master));
  struct winsize ws = {.ws_row = 40, .ws_col = 120};
  cr_assert_eq(ioctl(master, TIOCSWINSZ, &ws), 0, "TIOCSWINSZ: %s", strerror(errno));
  int errpipe[2] = {-1, -1};
  if (stderr_pipe) cr_assert_eq(pipe(errpipe), 0, "pipe: %s", strerror(errno));

  fflush(NULL);
  pid_t pid = fork();
  cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
  if (pid == 0) {
    /* A new session whose controlling terminal is the slave, as a shell would give. */
    if (setsid() < 0 || chdir(workdir) != 0) _exit(125);
    int slave = open(slave_name, O_RDWR);
    if (slave < 0 || dup2(slave, 0) < 0 || dup2(slave, 1) < 0) _exit(126);
    if (dup2(stderr_pipe ? errpipe[1] : slave, 2) < 0) _exit(126);
    close(master);
    execv(argv[0], argv);
    dprintf(1, "test_progress: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  if (stderr_pipe) close(errpipe[1]);

  tty_run r = {0, NULL, NULL, 0, -1.0};
  size_t tcap = 4096, pcap = 4096, plen = 0;
  r.terminal = calloc(1, tcap);
  r.pipe = calloc(1, pcap);
  cr_assert(r.terminal && r.pipe);
  int terminal_open = 1, pipe_open = stderr_pipe;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int wstatus = 0, exited = 0;
  /* Read while the child runs, since a full terminal buffer would block its
   * writes; once it is gone, read what is left until the pipe ends and the
   * terminal, with no process on its slave side, has nothing more. */
  while (terminal_open || pipe_open) {
    struct pollfd fds[2] = {{terminal_open ? master : -1, POLLIN, 0}, {pipe_open ? errpipe[0] : -1, POLLIN, 0}};
    int ready = poll(fds, 2, exited ? 200 : 50);
    if (exited && ready == 0) break;
    if (terminal_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
      terminal_open = drain(master, &r.terminal, &r.terminal_len, &tcap);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (r.first_bar_s < 0 && strstr(r.terminal, "\r["))
      r.first_bar_s = (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
    if (pipe_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
      pipe_open = drain(errpipe[0], &r.pipe, &plen, &pcap);
    if (!exited) {
      pid_t done = waitpid(pid, &wstatus, WNOHANG);
      cr_assert_neq(done, -1, "waitpid: %s", strerror(errno));
      exited = done == pid;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - start.tv_sec) > RUN_LIMIT_S) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      cr_assert_fail("prstm-run ran longer than %d s and was killed", RUN_LIMIT_S);
    }
  }
  if (!exited) cr_assert_eq(waitpid(pid, &wstatus, 0), pid, "waitpid: %s", strerror(errno));
  close(master);
  if (stderr_pipe) close(errpipe[0]);
  cr_assert(WIFEXITED(wstatus), "prstm-run was ended by signal %d", WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
  r.status = WEXITSTATUS(wstatus);
  return r;
}

static void tty_run_free(tty_run *r) {
  free(r->terminal);
  free(r->pipe);
}

/* The execution time the run wrote in its results file. */
static double executed_s(void) {
  FILE *f = fopen(work_path("results.json"), "rb");
  cr_assert_not_null(f, "the run wrote no results file");
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = 0;
  cJSON *root = cJSON_Parse(text);
  cr_assert_not_null(root, "results.json is not JSON");
  cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "time_s"), "execute");
  cr_assert(cJSON_IsNumber(t), "results.json has no time_s.execute");
  double s = t->valuedouble;
  cJSON_Delete(root);
  return s;
}

/* The precondition of every bar test: the run lasted long enough that a
 * bar was due had the terminal been eligible. */
static void assert_bar_was_due(void) {
  double s = executed_s();
  cr_assert_gt(s, BAR_DUE_S,
               "the chain executed in only %.2f s, too short for the bar to be due on this machine: raise CHAIN_LINKS",
               s);
}

/* One drawn bar: "\r[####      ]  40%  20,001 committed  29,999 pending  12.3 k tx/s". */
typedef struct bar_line {
  unsigned percent;
  unsigned long long committed, pending;
} bar_line;

/* Reads a count written with thousands separators; returns the text after it. */
static const char *read_count(const char *s, unsigned long long *out) {
  unsigned long long v = 0;
  int digits = 0;
  for (; (*s >= '0' && *s <= '9') || (*s == ',' && digits); s++) {
    if (*s == ',') continue;
    v = v * 10 + (unsigned long long)(*s - '0');
    digits++;
  }
  *out = v;
  return digits ? s : NULL;
}

/* Parses every bar drawn on the terminal, in order; returns how many. */
static unsigned parse_bars(const char *text, bar_line *bars, unsigned max) {
  unsigned n = 0;
  for (const char *p = strstr(text, "\r["); p && n < max; p = strstr(p + 1, "\r[")) {
    const char *close = strchr(p, ']');
    if (!close || close - p != 22) continue; /* "\r[" and 20 cells */
    bar_line b;
    const char *s = close + 1;
    while (*s == ' ') s++;
    if (sscanf(s, "%u%%", &b.percent) != 1) continue;
    s = strchr(s, '%') + 1;
    while (*s == ' ') s++;
    if (!(s = read_count(s, &b.committed)) || strncmp(s, " committed  ", 12) != 0) continue;
    if (!(s = read_count(s + 12, &b.pending)) || strncmp(s, " pending  ", 10) != 0) continue;
    const char *rate = strstr(s, "tx/s"), *next = strchr(s, '\r');
    if (!rate || (next && rate > next)) continue;
    bars[n++] = b;
  }
  return n;
}

/* The summary's line for a chain run in which every transaction committed. */
static const char *all_committed_line(void) {
  static char line[64];
  snprintf(line, sizeof line, "committed          %u", CHAIN_LINKS + 1);
  return line;
}

Test(progress, bar_shows_live_committed_and_pending_counts_on_a_terminal) {
  write_chain_config(CHAIN_LINKS);
  const char *options[] = {"--backend", "cpu", "--threads", "2", NULL};
  tty_run r = run_on_terminal(options, 0);
  cr_assert_eq(r.status, 0, "prstm-run failed:\n%s", r.terminal);
  assert_bar_was_due();
  /* The process started before the run did, so a bar due after one second
   * of the run reaches the terminal more than a second after the start. */
  cr_assert_geq(r.first_bar_s, 1.0, "the first bar came %.2f s after the start", r.first_bar_s);
  static bar_line bars[4096];
  unsigned n = parse_bars(r.terminal, bars, 4096);
  cr_assert_geq(n, 2, "expected a bar redrawn with live counts, got %u bars in:\n%s", n, r.terminal);
  const unsigned long long transactions = CHAIN_LINKS + 1;
  for (unsigned i = 0; i < n; i++) {
    cr_assert_leq(bars[i].committed + bars[i].pending, transactions, "bar %u: %llu committed + %llu pending", i,
                  bars[i].committed, bars[i].pending);
    cr_assert_leq(bars[i].percent, 100);
    if (i > 0) {
      cr_assert_geq(bars[i].committed, bars[i - 1].committed, "bar %u: committed went down", i);
      cr_assert_leq(bars[i].pending, bars[i - 1].pending, "bar %u: pending went up", i);
    }
  }
  /* Counts read live: they moved while the bar was up, and the run was
   * neither over nor untouched when it first showed. */
  cr_assert_lt(bars[0].committed, bars[n - 1].committed, "the committed count never moved");
  cr_assert_gt(bars[0].pending, 0);
  /* The line is blanked before the summary, which starts a line of its own. */
  const char *summary = strstr(r.terminal, "prstm-run " PRSTM_VERSION_STRING ": chain.json");
  cr_assert_not_null(summary, "no summary in:\n%s", r.terminal);
  const char *last_bar = r.terminal;
  for (const char *p = strstr(r.terminal, "\r["); p; p = strstr(p + 1, "\r[")) last_bar = p;
  cr_assert_lt(last_bar, summary, "a bar was drawn after the summary");
  cr_assert(summary > r.terminal && summary[-1] == '\r', "the summary does not start at the line's beginning");
  const char *blank = summary - 1;
  while (blank > last_bar && blank[-1] == ' ') blank--;
  cr_assert(blank > last_bar && blank[-1] == '\r' && summary - 1 - blank >= 60,
            "the bar was not blanked before the summary");
  cr_assert_not_null(strstr(summary, all_committed_line()), "%s", summary);
  tty_run_free(&r);
}

Test(progress, quiet_run_prints_nothing_on_a_terminal) {
  write_chain_config(CHAIN_LINKS);
  const char *options[] = {"--backend", "cpu", "--threads", "2", "--quiet", NULL};
  tty_run r = run_on_terminal(options, 0);
  cr_assert_eq(r.status, 0);
  assert_bar_was_due();
  cr_assert_eq(r.terminal_len, 0, "--quiet printed %zu bytes:\n%s", r.terminal_len, r.terminal);
  tty_run_free(&r);
}

Test(progress, no_bar_when_stderr_is_a_pipe) {
  write_chain_config(CHAIN_LINKS);
  const char *options[] = {"--backend", "cpu", "--threads", "2", NULL};
  tty_run r = run_on_terminal(options, 1);
  cr_assert_eq(r.status, 0, "prstm-run failed:\n%s%s", r.terminal, r.pipe);
  assert_bar_was_due();
  cr_assert_eq(strlen(r.pipe), 0, "stderr, a pipe, got:\n%s", r.pipe);
  /* The bar goes to stderr only: the terminal on stdout has the summary and no bar. */
  cr_assert_not_null(strstr(r.terminal, all_committed_line()), "%s", r.terminal);
  cr_assert_null(strstr(r.terminal, "pending"), "%s", r.terminal);
  tty_run_free(&r);
}

Test(progress, no_bar_for_a_run_shorter_than_a_second) {
  write_chain_config(100);
  const char *options[] = {"--backend", "cpu", "--threads", "2", NULL};
  tty_run r = run_on_terminal(options, 0);
  cr_assert_eq(r.status, 0, "prstm-run failed:\n%s", r.terminal);
  cr_assert_lt(executed_s(), 1.0);
  cr_assert_not_null(strstr(r.terminal, "committed          101"), "%s", r.terminal);
  cr_assert_null(strstr(r.terminal, "pending"), "%s", r.terminal);
  cr_assert_null(strstr(r.terminal, "\r["), "%s", r.terminal);
  tty_run_free(&r);
}

/* Every report an observer received. */
#define MAX_REPORTS 100000
typedef struct report_log {
  unsigned n;
  prstm_progress reports[MAX_REPORTS];
} report_log;

static void record(const prstm_progress *p, void *user) {
  report_log *log = user;
  if (log->n < MAX_REPORTS) log->reports[log->n] = *p;
  log->n++;
}

/* Reports in order are consistent and never go back. */
static void assert_reports_consistent(const report_log *log, uint64_t transactions) {
  cr_assert_leq(log->n, MAX_REPORTS);
  for (unsigned i = 0; i < log->n; i++) {
    const prstm_progress *p = &log->reports[i];
    cr_assert_eq(p->transactions, transactions);
    cr_assert_leq(p->committed, p->decided, "report %u: %llu committed of %llu decided", i,
                  (unsigned long long)p->committed, (unsigned long long)p->decided);
    cr_assert_eq(p->decided + p->abandoned + p->pending, transactions, "report %u does not add up", i);
    if (p->finished) cr_assert_eq(i + 1, log->n, "report %u is finished but not the last", i);
    if (i == 0) continue;
    const prstm_progress *q = &log->reports[i - 1];
    cr_assert_geq(p->committed, q->committed, "report %u: committed went down", i);
    cr_assert_geq(p->decided, q->decided, "report %u: decided went down", i);
    cr_assert_geq(p->abandoned, q->abandoned, "report %u: abandoned went down", i);
    cr_assert_geq(p->elapsed_s, q->elapsed_s, "report %u: time went back", i);
  }
}

/* The last report is the finished one, and its counts are the run's. */
static void assert_final_report_matches(const report_log *log, const prstm_results *r) {
  cr_assert_geq(log->n, 1, "no report at all");
  const prstm_progress *last = &log->reports[log->n - 1];
  cr_assert_eq(last->finished, 1, "the last report is not marked finished");
  cr_assert_eq(last->committed, r->committed);
  cr_assert_eq(last->decided, r->committed + r->failed);
  cr_assert_eq(last->abandoned, r->abandoned);
  cr_assert_eq(last->pending, 0);
}

static void need_gpu(void) { test_need_backend(prstm_workload_find("bank"), PRSTM_BACKEND_GPU); }

static prstm_engine *open_engine(const prstm_workload *wl, prstm_backend backend, uint32_t threads,
                                 prstm_semantic_mode semantic, uint32_t retry_limit, uint32_t watchdog_s) {
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = backend;
  opt.threads = threads;
  opt.semantic = semantic;
  opt.retry_limit = retry_limit;
  opt.watchdog_s = watchdog_s;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, wl, &opt), 0);
  return e;
}

static void append_bank(prstm_batch *b, const char *type, prstm_word a0, prstm_word a1, prstm_word a2) {
  const prstm_workload *wl = prstm_batch_workload(b);
  int t = prstm_type_find(wl, type);
  cr_assert_geq(t, 0);
  prstm_word args[3] = {a0, a1, a2};
  cr_assert_eq(prstm_batch_append(b, (unsigned)t, args, wl->types[t].nargs), 0);
}

Test(progress_api, observer_sees_live_counts_that_end_at_the_results) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_engine *e = open_engine(bank, PRSTM_BACKEND_CPU, 2, PRSTM_SEMANTIC_POSTPONE, 100, 60);
  prstm_state_spec spec = {.accounts = SHORT_CHAIN_LINKS + 1, .initial_balance = 0};
  cr_assert_eq(prstm_engine_init_state(e, &spec), 0);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank), 0);
  append_bank(b, "deposit", 0, 10, 0);
  for (unsigned k = SHORT_CHAIN_LINKS; k-- > 0;) append_bank(b, "transfer", k, k + 1, 10);
  static report_log log;
  cr_assert_eq(prstm_engine_set_progress(e, record, &log), 0);
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), 0, "%s", prstm_engine_error(e));
  cr_assert_eq(r.committed, SHORT_CHAIN_LINKS + 1);
  cr_assert_gt(r.execute_s, 2.0 * PRSTM_PROGRESS_INTERVAL_MS / 1000.0,
               "the chain executed in only %.3f s, too short for a report during the run: raise SHORT_CHAIN_LINKS",
               r.execute_s);
  cr_assert_geq(log.n, 2, "the observer was called %u times", log.n);
  cr_assert_eq(log.reports[0].finished, 0, "no report came during the run");
  cr_assert_gt(log.reports[0].pending, 0);
  assert_reports_consistent(&log, SHORT_CHAIN_LINKS + 1);
  assert_final_report_matches(&log, &r);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

/* A run that completes ends with a finished report equal to its results,
 * abandoned transactions included (retry mode abandons as it goes). */
static void finished_report_counts_abandoned_and_failed(prstm_backend backend, uint32_t threads) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_engine *e = open_engine(bank, backend, threads, PRSTM_SEMANTIC_RETRY, 0, 60);
  prstm_state_spec spec = {.accounts = 4096, .initial_balance = 100};
  cr_assert_eq(prstm_engine_init_state(e, &spec), 0);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank), 0);
  for (unsigned i = 0; i < 20000; i++) {
    prstm_word account = i % 4096;
    if (i % 10 == 0)
      append_bank(b, "withdraw", account, 1000, 0); /* never funded: abandoned */
    else if (i % 10 == 1)
      append_bank(b, "deposit", account, UINT64_MAX - 50, 0); /* overflows: fails */
    else
      append_bank(b, "transfer", account, (account + 1) % 4096, 1);
  }
  static report_log log;
  cr_assert_eq(prstm_engine_set_progress(e, record, &log), 0);
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), 0, "%s", prstm_engine_error(e));
  cr_assert_gt(r.abandoned, 0);
  cr_assert_gt(r.failed, 0);
  assert_reports_consistent(&log, 20000);
  assert_final_report_matches(&log, &r);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(progress_api, finished_report_counts_abandoned_and_failed_cpu) {
  finished_report_counts_abandoned_and_failed(PRSTM_BACKEND_CPU, 2);
}

Test(progress_api_gpu, finished_report_counts_abandoned_and_failed_gpu) {
  need_gpu();
  finished_report_counts_abandoned_and_failed(PRSTM_BACKEND_GPU, 4096);
}

/* A run that cannot end (one row conflicts forever) reports live until the
 * watchdog stops it, about every PRSTM_PROGRESS_INTERVAL_MS, and never
 * reports finished. The watchdog makes it last a second on any machine. */
static void stalled_run_reports_live_but_never_finished(prstm_backend backend, uint32_t threads) {
  prstm_engine *e = open_engine(&test_probe_workload, backend, threads, PRSTM_SEMANTIC_POSTPONE, 100, 1);
  prstm_word words[1024] = {0};
  cr_assert_eq(prstm_engine_set_state(e, words, 1024), 0);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
  for (prstm_word i = 0; i < 1000; i++) cr_assert_eq(prstm_batch_append(b, PROBE_INCREMENT, &i, 1), 0);
  prstm_word stuck = 1000;
  cr_assert_eq(prstm_batch_append(b, PROBE_LIVELOCK, &stuck, 1), 0);
  static report_log log;
  cr_assert_eq(prstm_engine_set_progress(e, record, &log), 0);
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), PRSTM_ESTALLED, "%s", prstm_engine_error(e));
  /* At least a second without progress, reported every 100 ms or so. */
  cr_assert_geq(log.n, 5, "the observer was called %u times during a stalled run", log.n);
  assert_reports_consistent(&log, 1001);
  for (unsigned i = 0; i < log.n; i++) {
    cr_assert_eq(log.reports[i].finished, 0, "report %u of a stopped run is marked finished", i);
    cr_assert_geq(log.reports[i].pending, 1, "report %u: the stuck row is not pending", i);
  }
  cr_assert_gt(log.reports[log.n - 1].elapsed_s, 0.9);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(progress_api, stalled_run_reports_live_but_never_finished_cpu) {
  stalled_run_reports_live_but_never_finished(PRSTM_BACKEND_CPU, 2);
}

Test(progress_api_gpu, stalled_run_reports_live_but_never_finished_gpu) {
  need_gpu();
  stalled_run_reports_live_but_never_finished(PRSTM_BACKEND_GPU, 256);
}

Test(progress_api, removed_observer_is_not_called) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_engine *e = open_engine(bank, PRSTM_BACKEND_CPU, 2, PRSTM_SEMANTIC_POSTPONE, 100, 60);
  prstm_state_spec spec = {.accounts = 16, .initial_balance = 100};
  cr_assert_eq(prstm_engine_init_state(e, &spec), 0);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank), 0);
  for (unsigned i = 0; i < 100; i++) append_bank(b, "transfer", i % 16, (i + 1) % 16, 1);
  static report_log log;
  prstm_results r;
  cr_assert_eq(prstm_engine_set_progress(e, record, &log), 0);
  cr_assert_eq(prstm_engine_run(e, b, &r), 0);
  assert_final_report_matches(&log, &r);
  unsigned calls = log.n;
  cr_assert_eq(prstm_engine_set_progress(e, NULL, &log), 0);
  cr_assert_eq(prstm_engine_run(e, b, &r), 0);
  cr_assert_eq(log.n, calls, "the removed observer was called again");
  cr_assert_eq(prstm_engine_set_progress(NULL, record, &log), PRSTM_EINVAL);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}
