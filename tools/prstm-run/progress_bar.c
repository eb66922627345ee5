/* progress_bar.c: prstm-run's progress bar: one line on a terminal's stderr, redrawn with live counts while the engine runs. */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

/* The progress bar: one line on stderr, redrawn in place with a carriage
 * return while the engine runs, and erased before anything else is printed.
 * Plain spaces erase it, not terminal escapes, so it works on any terminal. */
#define PROGRESS_DELAY_S 1.0 /* shorter runs show no bar at all */
#define PROGRESS_BAR_CELLS 20

/* Writes n with a comma between each group of three digits. */
static void format_count(char *out, size_t outlen, uint64_t n) {
  char digits[32];
  int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
  size_t at = 0;
  for (int i = 0; i < len && at + 2 < outlen; i++) {
    if (i > 0 && (len - i) % 3 == 0) out[at++] = ',';
    out[at++] = digits[i];
  }
  out[at] = 0;
}

/* Columns of the terminal on stderr; 80 when it does not say. */
static size_t terminal_columns(void) {
  struct winsize ws;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void progress_clear(progress_bar *bar) {
  if (!bar->drawn) return;
  fprintf(stderr, "\r%*s\r", (int)bar->drawn, "");
  fflush(stderr);
  bar->drawn = 0;
}

/* The engine's progress observer (prstm_engine_set_progress). */
void progress_draw(const prstm_progress *p, void *user) {
  progress_bar *bar = user;
  if (p->finished || cli_now() - bar->start <= PROGRESS_DELAY_S) return;
  uint64_t final = p->transactions - p->pending;
  double share = p->transactions ? (double) final / (double)p->transactions : 1.0;
  char committed[32], pending[32], round[32] = "";
  format_count(committed, sizeof committed, p->committed);
  format_count(pending, sizeof pending, p->pending);
  if (bar->round > 0) snprintf(round, sizeof round, "round %u ", bar->round + 1);
  /* The commit rate of this run so far, in a unit that keeps it readable. */
  double rate = p->elapsed_s > 0 ? (double)p->committed / p->elapsed_s : 0;
  const char *unit = rate >= 1e9 ? "G " : rate >= 1e6 ? "M " : rate >= 1e3 ? "k " : "";
  double scaled = rate >= 1e9 ? rate / 1e9 : rate >= 1e6 ? rate / 1e6 : rate >= 1e3 ? rate / 1e3 : rate;
  char counts[160];
  int counts_len = snprintf(counts, sizeof counts, " %3u%%  %s committed  %s pending  %.1f %stx/s",
                            (unsigned)(100.0 * share), committed, pending, scaled, unit);
  if (counts_len < 0) return;
  /* A line as wide as the terminal would wrap, and the carriage return
   * would then redraw only its last part: the bar gives up cells first (on
   * 80 columns, large counts leave it fewer than PROGRESS_BAR_CELLS), and
   * only a very narrow terminal cuts the counts. */
  size_t columns = terminal_columns();
  size_t fixed = strlen(round) + 2 + (size_t)counts_len;
  size_t cells = columns - 1 > fixed ? columns - 1 - fixed : 0;
  if (cells > PROGRESS_BAR_CELLS) cells = PROGRESS_BAR_CELLS;
  char line[256];
  size_t width = (size_t)snprintf(line, sizeof line, "%s", round);
  if (cells > 0) {
    size_t filled = (size_t)((double)cells * share);
    line[width++] = '[';
    for (size_t i = 0; i < cells; i++) line[width++] = i < filled ? '#' : ' ';
    line[width++] = ']';
  }
  width += (size_t)snprintf(line + width, sizeof line - width, "%s", counts);
  if (width > sizeof line - 1) width = sizeof line - 1;
  if (width > columns - 1) width = columns - 1;
  line[width] = 0;
  fprintf(stderr, "\r%s", line);
  if (bar->drawn > width) fprintf(stderr, "%*s", (int)(bar->drawn - width), "");
  fflush(stderr);
  if (width > bar->drawn) bar->drawn = width;
}
