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

/* Where the product's columns go: y itself (one part), or the caller's column parts (ABI 1.4). */
typedef struct sy_linear_out {
    uint32_t n;                                 /* parts, 1 .. SY_LINEAR_MAX_Y_PARTS */
    const sy_tensor *part[SY_LINEAR_MAX_Y_PARTS];
    int64_t first[SY_LINEAR_MAX_Y_PARTS + 1];  /* part i takes columns [first[i], first[i + 1]) */
} sy_linear_out;

/* x [M, K] and y [M, N] with unit inner stride (rows may be padded), w [N, K] and b [N] (optional)
 * dense; M, N and K within the BLAS int range, K at least 1. With n_y_parts (read only where the
 * caller's struct_size covers it): y none, and parts [M, N_i] of N_i >= 1 columns summing to N. */
sy_status sy_linear_check_args(const sy_linear_args *a, sy_error *err);

/* The outputs of args that passed sy_linear_check_args. */
void sy_linear_out_of(const sy_linear_args *a, sy_linear_out *out);

#ifdef __cplusplus
}
#endif
#endif
