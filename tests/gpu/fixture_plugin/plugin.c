/* Descriptor of the gpu_linear_fixture test plugin, y = x W^T + b in f32. The same file is compiled for
 * every library (sy_plugin_role.h); SY_PLUGIN_BACKEND_NAME (set by sy_add_plugin) names the backend,
 * and the op comes from cpu.c, gpu.cu or, in the GPU front, the forwarder to gpu.cu. */
#include <stdio.h>

#include "gpu_linear_fixture.h"

static sy_status fail(sy_error *err, const char *what, long long got, long long want)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "gpu_linear_fixture (%s): %s is %lld, expected %lld",
                 SY_PLUGIN_BACKEND_NAME, what, got, want);
    return SY_E_INVALID;
}

static sy_status check_f32_2d(const sy_tensor *t, const char *name, sy_error *err)
{
    if (t->dtype != SY_DTYPE_F32) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "gpu_linear_fixture (%s): %s has dtype %d, only f32 (%d) is supported",
                     SY_PLUGIN_BACKEND_NAME, name, (int)t->dtype, SY_DTYPE_F32);
        return SY_E_UNSUPPORTED;
    }
    if (t->ndim != 2) {
        char what[64];
        snprintf(what, sizeof what, "%s.ndim", name);
        return fail(err, what, t->ndim, 2);
    }
    return SY_OK;
}

sy_status gpu_linear_fixture_check(const sy_linear_args *a, sy_error *err)
{
    sy_status st;
    if ((st = check_f32_2d(&a->x, "x", err)) || (st = check_f32_2d(&a->w, "w", err)) ||
        (st = check_f32_2d(&a->y, "y", err)))
        return st;
    if (a->w.shape[1] != a->x.shape[1])
        return fail(err, "w.shape[1] (K)", a->w.shape[1], a->x.shape[1]);
    if (a->y.shape[0] != a->x.shape[0])
        return fail(err, "y.shape[0] (M)", a->y.shape[0], a->x.shape[0]);
    if (a->y.shape[1] != a->w.shape[0])
        return fail(err, "y.shape[1] (N)", a->y.shape[1], a->w.shape[0]);
    if (a->x.stride[1] != 1 || a->x.stride[0] < a->x.shape[1])
        return fail(err, "x.stride[0] (must be >= K, with stride[1] == 1)", a->x.stride[0], a->x.shape[1]);
    if (a->w.stride[1] != 1 || a->w.stride[0] != a->w.shape[1])
        return fail(err, "w.stride[0] (w must be contiguous)", a->w.stride[0], a->w.shape[1]);
    if (a->y.stride[1] != 1 || a->y.stride[0] < a->y.shape[1])
        return fail(err, "y.stride[0] (must be >= N, with stride[1] == 1)", a->y.stride[0], a->y.shape[1]);
    if (a->b.data) {
        if ((st = a->b.dtype == SY_DTYPE_F32 ? SY_OK : fail(err, "b.dtype", a->b.dtype, SY_DTYPE_F32)))
            return st;
        if (a->b.ndim != 1 || a->b.shape[0] != a->w.shape[0])
            return fail(err, "b.shape[0] (N)", a->b.shape[0], a->w.shape[0]);
    }
    return SY_OK;
}

static const sy_linear_caps fixture_caps = {
    .struct_size = sizeof(sy_linear_caps),
    .weight_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32),
    .act_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32),
    .has_bias = 1,
};

#if defined(SY_PLUGIN_GPU_FRONT)
/* The GPU front (sy_gpu_front.h): the host-side check runs here, before init too; the op itself is
 * in the device library that init opens. */
#include "sy_gpu_front.h"

static sy_status fixture_front_run(void *ctx, sy_stream stream, const sy_linear_args *a, sy_error *err)
{
    sy_status st = gpu_linear_fixture_check(a, err);
    return st != SY_OK ? st : sy_gpu_front_linear_ops.linear(ctx, stream, a, err);
}

SY_GPU_FRONT_INIT(fixture_front_init, SY_KIND_LINEAR, "gpu_linear_fixture")
#define FIXTURE_RUN fixture_front_run
#define FIXTURE_INIT fixture_front_init
#define FIXTURE_FINI sy_gpu_front_fini
#else
#include "sy_plugin_role.h"
#define FIXTURE_RUN gpu_linear_fixture_run
#define FIXTURE_INIT NULL
#define FIXTURE_FINI NULL
#endif

static const sy_linear_ops fixture_ops = {
    .struct_size = sizeof(sy_linear_ops),
    .linear = FIXTURE_RUN,
};

static const sy_plugin_desc fixture_desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_LINEAR,
    .name = "gpu_linear_fixture",
    .backend = SY_PLUGIN_BACKEND_NAME,
    .version = "0.0.1",
    .description = "test fixture for the GPU plugin build: f32 x W^T + b, one warp per output",
    .rank = -1000, /* never preferred, even when a search path reaches it */
    .caps = &fixture_caps,
    .ops = &fixture_ops,
    .init = FIXTURE_INIT,
    .fini = FIXTURE_FINI,
};

static const sy_plugin_desc *const fixture_list[] = {&fixture_desc, NULL};

SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_major, uint32_t host_minor);
SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_major, uint32_t host_minor)
{
    (void)host_minor;
    return host_major == SY_ABI_MAJOR ? fixture_list : NULL;
}
