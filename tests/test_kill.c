/* test_kill.c: kills prstm-run at moments spread over its whole run and checks that each output file is the old one or the whole new one. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_paths.h"

#define OLD_TEXT "old contents\n"

static char workdir[256];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  if (len) *len = got;
  return s;
}

/* Starts prstm-run on the kill config in the work folder; its output goes
 * to /dev/null so only the files it writes matter. */
static pid_t start_run(void) {
  char config[1024];
  snprintf(config, sizeof config, "%s/kill/run-with-outputs.json", test_data_dir());
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (chdir(workdir) != 0) _exit(126);
    FILE *null = freopen("/dev/null", "w", stdout);
    (void)null;
    null = freopen("child.stderr", "w", stderr);
    execl(test_run_path(), test_run_path(), config, "--backend", "cpu", "--quiet", (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* An output is acceptable when it is the old text or a complete JSON
 * document with the key a finished run writes. */
static int output_state(const char *name, const char *key) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", workdir, name);
  size_t len = 0;
  char *text = read_text(path, &len);
  cr_assert_not_null(text, "%s disappeared", name);
  int state;
  if (strcmp(text, OLD_TEXT) == 0) {
    state = 0;
  } else {
    cJSON *doc = cJSON_ParseWithLength(text, len);
    cr_assert_not_null(doc, "%s is neither the old file nor whole JSON (%zu bytes)", name, len);
    cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(doc, key), "%s lacks %s", name, key);
    cJSON_Delete(doc);
    state = 1;
  }
  free(text);
  return state;
}

static void make_workdir(void) {
  snprintf(workdir, sizeof workdir, "/tmp/prstm-kill-XXXXXX");
  cr_assert_not_null(mkdtemp(workdir));
}

static void remove_workdir(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
  int rc = system(cmd);
  (void)rc;
}

Test(kill, killed_runs_leave_old_or_whole_new_outputs, .init = make_workdir, .fini = remove_workdir, .timeout = 600) {
  /* One full run first, to know how long a run takes. */
  char results[512], final_state[512];
  snprintf(results, sizeof results, "%s/kill-results.json", workdir);
  snprintf(final_state, sizeof final_state, "%s/kill-final-state.json", workdir);
  double t0 = now_s();
  pid_t pid = start_run();
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  double full = now_s() - t0;
  char errpath[512];
  snprintf(errpath, sizeof errpath, "%s/child.stderr", workdir);
  char *childerr = read_text(errpath, NULL);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reference run failed (status %d): %s", status,
            childerr ? childerr : "");
  free(childerr);
  cr_assert_eq(output_state("kill-results.json", "committed"), 1);
  cr_assert_eq(output_state("kill-final-state.json", "state"), 1);

  /* Then kills at moments spread evenly over that span and past it, so that
   * some land before, some during and some after the outputs are written. */
  int kills = 24, old_seen = 0, new_seen = 0;
  /* Runs slow down when other tests share the cores, so where the spread
   * saw no whole new outputs (or no old ones), up to three more kills come
   * later (or sooner) each time: 3.2, 6.4 and 12.8 times the reference run
   * (or a tenth, a hundredth, and none of it). */
  int done = 0;
  for (int k = 0; k < kills + 3; k++, done++) {
    if (k >= kills && new_seen > 0 && old_seen > 0) break;
    write_text(results, OLD_TEXT);
    write_text(final_state, OLD_TEXT);
    double at = full * 1.6 * (k + 0.5) / kills;
    if (k >= kills)
      at = new_seen == 0 ? full * 1.6 * (double)(2 << (k - kills))
                         : full * (k - kills < 2 ? (k == kills ? 0.1 : 0.01) : 0.0);
    pid = start_run();
    struct timespec ts = {(time_t)at, (long)((at - (double)(time_t)at) * 1e9)};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    int r = output_state("kill-results.json", "committed");
    int f = output_state("kill-final-state.json", "state");
    old_seen += (r == 0) + (f == 0);
    new_seen += (r == 1) + (f == 1);
  }
  cr_log_info("%d kills, a run taking %.2f s: %d outputs old, %d whole new", done, full, old_seen, new_seen);
  cr_assert_gt(old_seen, 0, "no kill landed before the outputs were written");
  cr_assert_gt(new_seen, 0, "no run got to write its outputs");
}
