/* A linear fixture around the in-tree linear that rounds an f32 x to bf16 whenever the weights are
 * bf16, as a GPU GEMM with one tensor-core input type does: lower precision the suite's bf16
 * tolerance must admit (the conformance tests expect every case to pass). */
#include <stdio.h>
#include <stdlib.h>

#include "fixture_plugin.h"
#include "sy_numeric.h"

static const sy_linear_caps caps = {
    .struct_size = sizeof(sy_linear_caps),
    .weight_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .act_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .has_bias = 1,
    .features = SY_LINEAR_SPLIT_Y, /* the wrapped linear's; y's parts pass through untouched */
};

static sy_status linear(void *ctx, sy_stream stream, const sy_linear_args *a, sy_error *err)
{
    const conf_wrapped *wrapped = ctx;
    const sy_linear_ops *inner = wrapped->desc->ops;
    if (a->x.dtype != SY_DTYPE_F32 || a->w.dtype != SY_DTYPE_BF16)
        return inner->linear(wrapped->ctx, stream, a, err);
    const int64_t M = a->x.shape[0], K = a->x.shape[1];
    float *x = malloc((size_t)(M * K) * sizeof(float) + 1);
    if (!x) {
        snprintf(err->msg, sizeof err->msg, "fixture: out of memory");
        return SY_E_NOMEM;
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            x[m * K + k] = sy_round_bf16(((const float *)a->x.data)[m * a->x.stride[0] + k]);
    sy_linear_args copy = *a;
    copy.x = sy_tensor_contiguous(x, SY_DTYPE_F32, 2, a->x.shape);
    sy_status st = inner->linear(wrapped->ctx, stream, &copy, err);
    free(x);
    return st;
}

static const sy_linear_ops ops = {sizeof(sy_linear_ops), 0, linear};

CONF_FIXTURE_ENTRY(SY_KIND_LINEAR, CONF_FIXTURE_NAME, &caps, &ops, conf_wrapped_init, conf_wrapped_fini)
