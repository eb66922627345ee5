/* wrong_abi.c: a test plugin that claims another engine ABI, which prstm-run must refuse. */
#include "prstm.h"

PRSTM_EXPORT const unsigned prstm_plugin_abi_version = PRSTM_ABI_VERSION + 1000;
PRSTM_EXPORT const prstm_workload *prstm_plugin_workload(void) { return NULL; }
