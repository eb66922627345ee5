/* nvtx_recorder.c: an NVTX injection library that appends every range push and pop to the file named by PRSTM_NVTX_LOG, so tests can see prstm's ranges without Nsight Systems. */
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>

/* NVTX loads this library from NVTX_INJECTION64_PATH at the first NVTX call
 * of each module that has its own copy of the NVTX header (prstm-run and
 * libprstm each have one), so it can be initialised more than once: the log
 * is opened for appending, and each line is written in one call. */
static FILE *recorder_log;

static int NVTX_API recorder_push(const char *name) {
  if (recorder_log) {
    fprintf(recorder_log, "push %s\n", name ? name : "(null)");
    fflush(recorder_log);
  }
  return 0;
}

static int NVTX_API recorder_pop(void) {
  if (recorder_log) {
    fputs("pop\n", recorder_log);
    fflush(recorder_log);
  }
  return 0;
}

/* Returning 0 tells NVTX the injection failed, and the ranges stay no-ops. */
__attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const char *path = getenv("PRSTM_NVTX_LOG");
  if (!path || !get_table) return 0;
  const NvtxExportTableCallbacks *callbacks = (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
  if (!callbacks || !callbacks->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = NULL;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table ||
      size < NVTX_CBID_CORE_RangePop)
    return 0;
  if (!recorder_log) recorder_log = fopen(path, "a");
  if (!recorder_log) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)recorder_push;
  *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)recorder_pop;
  return 1;
}
