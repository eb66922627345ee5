/* seats_gpu.cu: the seat-booking example's persistent GPU kernel, instantiated from the shared bodies. */
#include "seats_body.h"

PRSTM_GPU_WORKER(seats, seats_dispatch, SEATS_CAPACITY)
