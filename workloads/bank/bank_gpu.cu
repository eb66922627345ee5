/* bank_gpu.cu: the bank's persistent GPU kernels, instantiated from the shared bodies. */
/* Transfers commit on the direct path and never validate a read set; the
 * grouped validation's code, unused, only slowed these kernels. */
#define STM_VALIDATE_GROUPED 0
#include "bank_body.h"

PRSTM_GPU_WORKER(bank_pair, bank_dispatch, BANK_PAIR_CAPACITY)
PRSTM_GPU_WORKER(bank_small, bank_dispatch, BANK_SMALL_CAPACITY)
PRSTM_GPU_WORKER(bank_wide, bank_dispatch, BANK_WIDE_CAPACITY)
