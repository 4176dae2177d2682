/* A backend over host memory for the emulated GPU checks (check_kv_attn_emu*,
 * check_moe_norm_linear_emu*): the GPU plugins' kernels run on tests/gpu's CPU emulator, so their
 * "device" memory is the host's and every copy, fill and synchronization is done by the time the
 * call returns. Its device reports the emulator's warp width (SY_EMU_WARP_SIZE) and an H200's 132
 * multiprocessors, so that the plugins plan their grids as they would there. */
#ifndef SY_CHECK_EMU_BACKEND_H
#define SY_CHECK_EMU_BACKEND_H

#include "switchyard/backend.h"

extern const sy_backend_desc sy_check_emu_backend;

#endif
