/* The argument check of the linear op, shared by the host op (cpu.c) and the GPU one (gpu.cu), so that
 * both refuse the same calls with the same messages. */
#ifndef SY_LINEAR_ARGS_H
#define SY_LINEAR_ARGS_H

#include <stdint.h>

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dtypes of x, w, b and y either op takes, in any mix. */
#define SY_LINEAR_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

/* x [M, K] and y [M, N] with unit inner stride (rows may be padded), w [N, K] and b [N] (optional)
 * dense; M, N and K within the BLAS int range, K at least 1. */
sy_status sy_linear_check_args(const sy_linear_args *a, sy_error *err);

#ifdef __cplusplus
}
#endif
#endif
