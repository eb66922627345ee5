/* bank_gpu.cu: the bank's persistent GPU kernels, instantiated from the shared bodies. */
/* A transfer's first attempts lock its words as they read them and commit
 * without validating, and a later retry validates two reads: the grouped validation
 * gains these kernels nothing, and its code in them cost bank-transfers
 * 2.5% on an H200. */
#define STM_VALIDATE_GROUPED 0
#include "bank_body.h"

PRSTM_GPU_WORKER(bank_pair, bank_dispatch, BANK_PAIR_CAPACITY)
PRSTM_GPU_WORKER(bank_small, bank_dispatch, BANK_SMALL_CAPACITY)
PRSTM_GPU_WORKER(bank_wide, bank_dispatch, BANK_WIDE_CAPACITY)
