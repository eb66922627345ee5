/* test_workload.c: the probe workload's type table and CPU worker, built through the same mechanism as user workloads. */
/* The probe's add types commit side by side where the workload says
 * uses_add (test_probe_adds_workload); its tickets are taken at commit. */
#define PRSTM_USES_ADD 1
#define PRSTM_USES_TICKETS 1
#include "test_workload.h"
#if !PRSTM_ADDS_COMPILED || !PRSTM_TICKETS_COMPILED
#error "test_workload.h must be the first include of prstm_tx.h here (PRSTM_USES_ADD, PRSTM_USES_TICKETS)"
#endif

PRSTM_CPU_WORKER(probe, probe_dispatch, PROBE_CAPACITY)

#ifndef PRSTM_HAVE_CUDA
/* Without CUDA no memory is page-locked for a GPU (test_workload.h). */
int test_host_pages_locked(const void *p) {
  (void)p;
  return -1;
}
int test_host_pages_lock(void *p, size_t bytes) {
  (void)p;
  (void)bytes;
  return -1;
}
int test_host_pages_unlock(void *p) {
  (void)p;
  return -1;
}
#endif

#ifdef PRSTM_HAVE_CUDA
int probe_gpu_launch(const prstm_exec_ctx *ctx, uint32_t threads, void *stream, char *err, size_t errlen);
int probe_gpu_max_threads(uint32_t *max_threads, char *err, size_t errlen);
#define PROBE_GPU probe_gpu_launch, probe_gpu_max_threads
#else
#define PROBE_GPU NULL, NULL
#endif

static const prstm_type_desc probe_types[] = {
    {"skew", 0, 0, 2, {{"read", PRSTM_ARG_ADDRESS}, {"write", PRSTM_ARG_ADDRESS}}, {NULL}},
    {"increment", 0, 0, 1, {{"word", PRSTM_ARG_ADDRESS}}, {NULL}},
    {"sum", 0, 1, 2, {{"first", PRSTM_ARG_ADDRESS}, {"count", PRSTM_ARG_UINT}}, {NULL}},
    {"touch", 0, 0, 1, {{"words", PRSTM_ARG_ADDRESS_LIST}}, {NULL}},
    {"wild", 0, 1, 1, {{"word", PRSTM_ARG_UINT}}, {NULL}},
    {"move", 0, 0, 3, {{"from", PRSTM_ARG_ADDRESS}, {"to", PRSTM_ARG_ADDRESS}, {"amount", PRSTM_ARG_UINT}}, {NULL}},
    {"livelock", 0, 0, 1, {{"word", PRSTM_ARG_ADDRESS}}, {NULL}},
    {"add", 0, 0, 2, {{"word", PRSTM_ARG_ADDRESS}, {"delta", PRSTM_ARG_UINT}}, {NULL}},
    {"add_then_read",
     0,
     0,
     3,
     {{"word", PRSTM_ARG_ADDRESS}, {"delta", PRSTM_ARG_UINT}, {"to", PRSTM_ARG_ADDRESS}},
     {NULL}},
    {"copy", 0, 0, 2, {{"from", PRSTM_ARG_ADDRESS}, {"to", PRSTM_ARG_ADDRESS}}, {NULL}},
    {"set", 0, 0, 2, {{"word", PRSTM_ARG_ADDRESS}, {"value", PRSTM_ARG_UINT}}, {NULL}},
    {"ticket", 0, 0, 2, {{"counter", PRSTM_ARG_ADDRESS}, {"dest", PRSTM_ARG_ADDRESS}}, {NULL}},
    {"ticket_then_read",
     0,
     0,
     3,
     {{"counter", PRSTM_ARG_ADDRESS}, {"dest", PRSTM_ARG_ADDRESS}, {"to", PRSTM_ARG_ADDRESS}},
     {NULL}},
    {"sum_then_ticket",
     0,
     0,
     4,
     {{"first", PRSTM_ARG_ADDRESS},
      {"count", PRSTM_ARG_UINT},
      {"counter", PRSTM_ARG_ADDRESS},
      {"dest", PRSTM_ARG_ADDRESS}},
     {NULL}},
};

const prstm_workload test_probe_workload = {
    .name = "probe",
    .ntypes = sizeof probe_types / sizeof probe_types[0],
    .types = probe_types,
    .nvariants = 1,
    .variants = {{PRSTM_MAX_COLUMNS, PROBE_CAPACITY, probe_cpu_worker, PROBE_GPU}},
};

const prstm_workload test_probe_adds_workload = {
    .name = "probe_adds",
    .ntypes = sizeof probe_types / sizeof probe_types[0],
    .types = probe_types,
    .nvariants = 1,
    .variants = {{PRSTM_MAX_COLUMNS, PROBE_CAPACITY, probe_cpu_worker, PROBE_GPU}},
    .uses_add = PRSTM_ADDS_COUNTED,
};
