/* write_atomic.c: writes an output file so that readers see either the old contents or the complete new ones, and the folders and temporary files the other writers share. */
/* mkstemp, fsync, fchmod and O_DIRECTORY are POSIX.1-2008; ask for them
 * explicitly so a plain -std=c11 build sees them. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loaders_internal.h"

/* The process umask, read without umask() because setting and restoring it
 * would race with other threads creating files. Linux shows it in
 * /proc/self/status; elsewhere the common default 022 is assumed. */
static mode_t current_umask(void) {
  mode_t mask = 022;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return mask;
  char line[256];
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned int m;
    if (sscanf(line, "Umask: %o", &m) == 1) {
      mask = (mode_t)(m & 0777);
      break;
    }
  }
  fclose(f);
  return mask;
}

/* Flushes the folder entry of the rename to disk. Best effort: the file
 * itself is already complete, and some file systems refuse to fsync a folder. */
static void sync_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir;
  if (slash == NULL)
    dir = strdup(".");
  else if (slash == path)
    dir = strdup("/");
  else {
    dir = malloc((size_t)(slash - path) + 1);
    if (dir != NULL) {
      memcpy(dir, path, (size_t)(slash - path));
      dir[slash - path] = '\0';
    }
  }
  if (dir == NULL) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

/* Writes straight into something that is not a regular file (a device such
 * as /dev/null or /dev/stdout, a pipe): renaming over it would replace the
 * device itself, and atomicity means nothing for a stream. */
static int write_in_place(const char *path, const char *text, size_t len, char *err, size_t errlen) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    loaders_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return PRSTM_EIO;
  }
  size_t put = len ? fwrite(text, 1, len, f) : 0;
  int rc = (put != len || fflush(f) != 0) ? errno : 0;
  if (fclose(f) != 0 && rc == 0) rc = errno;
  if (rc != 0 || put != len) {
    loaders_errf(err, errlen, "cannot write %s: %s", path, strerror(rc ? rc : EIO));
    return PRSTM_EIO;
  }
  return 0;
}

static int write_atomic_regular(const char *path, const char *text, size_t len, char *err, size_t errlen);

int prstm_write_file_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen) {
  if (path == NULL || path[0] == '\0' || (text == NULL && len > 0)) {
    loaders_errf(err, errlen, "prstm_write_file_atomic: invalid argument");
    return PRSTM_EINVAL;
  }
  /* A symbolic link is followed, so the file it names is replaced and the
   * link kept; an existing non-regular file is written in place. */
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      loaders_errf(err, errlen, "cannot write %s: %s", path, strerror(EISDIR));
      return PRSTM_EIO;
    }
    return write_in_place(path, text, len, err, errlen);
  }
  struct stat lst;
  if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
    char *target = realpath(path, NULL);
    if (target == NULL) {
      /* A dangling link: create the file it names, beside the link when the
       * name is relative. */
      char name[4096];
      ssize_t n = readlink(path, name, sizeof name - 1);
      if (n > 0) {
        name[n] = '\0';
        const char *slash = strrchr(path, '/');
        size_t dirlen = name[0] == '/' || slash == NULL ? 0 : (size_t)(slash - path) + 1;
        target = malloc(dirlen + (size_t)n + 1);
        if (target != NULL) {
          memcpy(target, path, dirlen);
          memcpy(target + dirlen, name, (size_t)n + 1);
        }
      }
    }
    if (target != NULL) {
      int rc = write_atomic_regular(target, text, len, err, errlen);
      free(target);
      return rc;
    }
  }
  return write_atomic_regular(path, text, len, err, errlen);
}

static int write_atomic_regular(const char *path, const char *text, size_t len, char *err, size_t errlen) {
  /* The temporary file sits next to the target: rename is only atomic within
   * one file system. */
  static const char suffix[] = ".tmpXXXXXX";
  size_t plen = strlen(path);
  char *tmp = malloc(plen + sizeof suffix);
  if (tmp == NULL) {
    loaders_errf(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
    return PRSTM_ENOMEM;
  }
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, suffix, sizeof suffix);

  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    loaders_errf(err, errlen, "cannot write %s: %s", path, strerror(e));
    free(tmp);
    return PRSTM_EIO;
  }

  /* mkstemp creates the file 0600; give it the mode a plain fopen would have
   * given a new file, or keep the mode of the file being replaced. */
  struct stat st;
  mode_t mode = (stat(path, &st) == 0 && S_ISREG(st.st_mode)) ? (st.st_mode & 07777) : (0666 & ~current_umask());
  (void)fchmod(fd, mode);

  int e = 0;
  FILE *f = fdopen(fd, "wb");
  if (f == NULL) {
    e = errno;
    close(fd);
    goto fail;
  }
  if (len > 0 && fwrite(text, 1, len, f) != len) {
    e = errno != 0 ? errno : EIO;
    goto fail;
  }
  if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
    e = errno;
    goto fail;
  }
  /* fclose can still report a deferred write error (NFS, quota). */
  int closed = fclose(f);
  f = NULL;
  if (closed != 0) {
    e = errno;
    goto fail;
  }
  if (rename(tmp, path) != 0) {
    e = errno;
    goto fail;
  }
  free(tmp);
  sync_parent(path);
  return 0;

fail:
  if (f != NULL) fclose(f);
  unlink(tmp);
  free(tmp);
  loaders_errf(err, errlen, "cannot write %s: %s", path, strerror(e != 0 ? e : EIO));
  return PRSTM_EIO;
}

int loaders_make_folder(const char *dir, char *err, size_t errlen) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    loaders_errf(err, errlen, "%s: cannot create the folder: %s", dir, strerror(errno));
    return PRSTM_EIO;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    loaders_errf(err, errlen, "%s: not a folder", dir);
    return PRSTM_EIO;
  }
  return 0;
}

int loaders_commit_tmp(FILE *f, int ok, const char *tmp, const char *path, char *err, size_t errlen) {
  if (fclose(f) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    loaders_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    unlink(tmp);
    return PRSTM_EIO;
  }
  return 0;
}
