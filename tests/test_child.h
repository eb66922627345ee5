/* test_child.h: scratch folders and child processes for the tests: a program run with stdin from /dev/null, stdout and stderr in files and a time limit, and the files read back; the includer defines _XOPEN_SOURCE 700 before any header. */
#ifndef TEST_CHILD_H
#define TEST_CHILD_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Creates a fresh scratch folder prefix-XXXXXX under $TMPDIR (or /tmp) and
 * writes its path into dir. */
static inline void test_make_scratch(char *dir, size_t dirlen, const char *prefix) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, dirlen, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
  cr_assert_not_null(mkdtemp(dir), "cannot create a temporary folder: %s", strerror(errno));
}

/* dir/name in one of a few rotating buffers, so that one call can take
 * several such paths at once. */
static inline const char *test_path(const char *dir, const char *name) {
  static char bufs[8][PATH_MAX + 64];
  static unsigned next;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
  return b;
}

/* Removes one entry of a scratch folder; nftw calls it deepest first. */
static inline int test_remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* Removes a scratch folder and everything in it, without following links. */
static inline void test_remove_tree(const char *dir) { nftw(dir, test_remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Reads a whole file, NUL-terminated, or returns NULL when it cannot be opened. */
static inline char *test_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t len = 0, cap = 4096;
  char *text = malloc(cap);
  cr_assert_not_null(text);
  size_t got;
  while ((got = fread(text + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len - 1 == 0) {
      cap *= 2;
      text = realloc(text, cap);
      cr_assert_not_null(text);
    }
  }
  fclose(f);
  text[len] = '\0';
  return text;
}

/* Seconds since start, on the monotonic clock. */
static inline double test_seconds_since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + 1e-9 * (double)(now.tv_nsec - start->tv_nsec);
}

/* Runs argv[0] with argv (NULL-terminated) in the folder workdir, stdin from
 * /dev/null, stdout and stderr written to the files out_path and err_path
 * (paths as seen from the test, created or emptied). Waits for it, but kills
 * it once it has run limit_s seconds. Fills *wstatus as waitpid does, and
 * returns 0, or -1 when the child was killed for running too long: the
 * caller then cleans up and fails the test. A child that cannot be set up
 * exits with 126, one that cannot run the program with 127 (saying why on
 * its stderr). */
static inline int test_run_child(char *const argv[], const char *workdir, const char *out_path, const char *err_path,
                                 double limit_s, int *wstatus) {
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_neq(pid, -1, "fork failed: %s", strerror(errno));
  if (pid == 0) {
    /* The child: nothing here may return into the test. */
    int in = open("/dev/null", O_RDONLY);
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0 || chdir(workdir) != 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
      _exit(126);
    execv(argv[0], argv);
    dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    pid_t done = waitpid(pid, wstatus, WNOHANG);
    if (done == pid) return 0;
    cr_assert_eq(done, 0, "waitpid failed: %s", strerror(errno));
    if (test_seconds_since(&start) >= limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, wstatus, 0);
      return -1;
    }
    struct timespec pause = {0, 5 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

#endif /* TEST_CHILD_H */
