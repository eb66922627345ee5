/* csv.c: prstm-bench's CSV rows: one per runner of a point, every field a number or a cleaned string. */
#include <math.h>
#include <string.h>

#include "bench.h"

/* ---- CSV ---- */

const char bench_csv_header[] =
    "experiment,workload,series,x_name,x,runner,status,backend,device,threads,lock_coverage,transactions,rounds,"
    "committed,abandoned,failed,aborts,postponements,repeats,kernel_s,e2e_s,tx_s,e2e_tx_s,vs_ceiling,vs_serial,"
    "vs_cpu,gpu_bytes,gpu_bytes_per_tx,table_bytes_per_tx,invariant,outcomes,verify,note\n";

double row_tx_s(const bench_row *r) { return r->status == ROW_OK && r->kernel_s > 0 ? r->committed / r->kernel_s : 0; }
double row_e2e_tx_s(const bench_row *r) { return r->status == ROW_OK && r->e2e_s > 0 ? r->committed / r->e2e_s : 0; }

static void csv_num(FILE *f, double v) {
  if (v > 0 && isfinite(v))
    fprintf(f, ",%.6g", v);
  else
    fputs(",", f);
}

void write_rows(FILE *f, const bench_point *p, bench_row *rows) {
  const double ceiling = row_tx_s(&rows[R_GPU_CEILING]), serial = row_e2e_tx_s(&rows[R_CPU_SERIAL]),
               cpu = row_e2e_tx_s(&rows[R_CPU_POSTPONE]);
  for (unsigned id = 0; id < R_COUNT; id++) {
    bench_row *r = &rows[id];
    if (r->status == ROW_NOT_RUN) continue;
    const int ok = r->status == ROW_OK, counted = ok || r->status == ROW_INCOMPLETE;
    bench_csv_clean(r->device);
    bench_csv_clean(r->note);
    fprintf(f, "%s,%s,%s,%s,%.6g,%s,%s,%s,%s", p->experiment, p->wl->name, p->series, p->x_name, p->x, runner_names[id],
            row_status_names[r->status], r->backend ? r->backend : (RUNNER_BIT(id) & RUNNERS_GPU ? "gpu" : "cpu"),
            r->device);
    if (counted)
      fprintf(f, ",%u", r->threads);
    else
      fputs(",", f);
    fprintf(f, ",%u", p->lock_coverage);
    if (counted)
      fprintf(f, ",%llu,%u,%llu,%llu,%llu,%llu,%llu,%u", (unsigned long long)r->transactions, r->rounds,
              (unsigned long long)r->committed, (unsigned long long)r->abandoned, (unsigned long long)r->failed,
              (unsigned long long)r->aborts, (unsigned long long)r->postponements, r->repeats);
    else
      fputs(",,,,,,,,", f);
    csv_num(f, ok ? r->kernel_s : 0);
    csv_num(f, ok ? r->e2e_s : 0);
    csv_num(f, row_tx_s(r));
    csv_num(f, row_e2e_tx_s(r));
    /* Ratios to the baselines of the same point and batch: kernel against
     * kernel for the ceiling, end to end for the serial replay and the CPU. */
    csv_num(f, ok && (RUNNER_BIT(id) & RUNNERS_GPU) && id != R_GPU_CEILING && ceiling > 0 ? row_tx_s(r) / ceiling : 0);
    csv_num(f, ok && serial > 0 ? row_e2e_tx_s(r) / serial : 0);
    csv_num(f, ok && cpu > 0 ? row_e2e_tx_s(r) / cpu : 0);
    if (ok && r->gpu_bytes)
      fprintf(f, ",%llu", (unsigned long long)r->gpu_bytes);
    else
      fputs(",", f);
    csv_num(f, ok && r->gpu_bytes && r->transactions ? (double)r->gpu_bytes / (double)r->transactions : 0);
    csv_num(f, ok && r->gpu_bytes ? r->table_bytes_per_tx : 0);
    fprintf(f, ",%s,%s,%s,%s\n", r->invariant ? r->invariant : "", r->outcomes ? r->outcomes : "", r->verify, r->note);
  }
  fflush(f);
}
