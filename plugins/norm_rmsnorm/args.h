/* The argument check of norm_rmsnorm's ops, shared by the host op (cpu.c) and the GPU one (gpu.cu),
 * so that both refuse the same calls with the same messages. */
#ifndef SY_NORM_RMSNORM_ARGS_H
#define SY_NORM_RMSNORM_ARGS_H

#include <stdint.h>

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest pad_to_multiple either op accepts: one value, so that the cpu and GPU libraries declare the same caps. */
enum { SY_NORM_RMSNORM_MAX_PAD = 4096 };

/* Every tensor of `a` present where it must be, of a dtype in `dtype_mask`, of its [M, N] (out: [M, nout])
 * shape, rows of unit stride; eps finite and >= 0; pad_to_multiple at most SY_NORM_RMSNORM_MAX_PAD and
 * nout (N rounded up to it) at most `max_out_cols`. Sets *nout on success. */
sy_status sy_norm_rmsnorm_check_args(const sy_norm_args *a, uint32_t dtype_mask, int64_t max_out_cols, int64_t *nout,
                                     sy_error *err);

#ifdef __cplusplus
}
#endif
#endif
