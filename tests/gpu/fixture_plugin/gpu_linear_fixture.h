/* The fixture's one op, implemented by cpu.c for the cpu library and by gpu.cu for the GPU ones,
 * and the argument check all of them share (in plugin.c). */
#ifndef GPU_LINEAR_FIXTURE_H
#define GPU_LINEAR_FIXTURE_H

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* f32 only: x [M, K] with row stride >= K, w [N, K] contiguous, optional b [N], y [M, N] with row
 * stride >= N. */
sy_status gpu_linear_fixture_check(const sy_linear_args *args, sy_error *err);
sy_status gpu_linear_fixture_run(void *ctx, sy_stream stream, const sy_linear_args *args, sy_error *err);

#ifdef __cplusplus
}
#endif
#endif
