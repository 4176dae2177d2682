/* A norm fixture around the in-tree rmsnorm with one planted defect: it declares
 * pad_to_multiple but never writes the pad columns (they keep whatever the buffer held). */
#include <string.h>

#include "fixture_plugin.h"

static const sy_norm_caps caps = {
    .struct_size = sizeof(sy_norm_caps),
    .features = SY_NORM_RMSNORM | SY_NORM_FUSED_ADD | SY_NORM_PAD_TO_MULTIPLE,
    .dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .max_pad_multiple = 4096,
};

static sy_status rmsnorm(void *ctx, sy_stream stream, const sy_norm_args *a, sy_error *err)
{
    const conf_wrapped *w = ctx;
    sy_norm_args copy = *a;
    copy.pad_to_multiple = 0;
    copy.out.shape[1] = a->x.shape[1]; /* the first N columns of each padded row */
    const sy_norm_ops *inner = w->desc->ops;
    return inner->rmsnorm(w->ctx, stream, &copy, err);
}

static const sy_norm_ops ops = {sizeof(sy_norm_ops), 0, rmsnorm};

CONF_FIXTURE_ENTRY(SY_KIND_NORM, CONF_FIXTURE_NAME, &caps, &ops, conf_wrapped_init, conf_wrapped_fini)
