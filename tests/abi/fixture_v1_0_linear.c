/* A linear plugin compiled against the frozen ABI 1.0 headers (tests/fixtures/abi-v1.0) and nothing
 * else: what a third party built in the 1.0 days. The current host must load it, compose it and run
 * it. It uses every part of the 1.0 contract a plugin touches: the descriptor, a caps record, an
 * ops table, init / fini with the host API (a workspace allocated and freed through it), the
 * per-call context, and argument structs it reads only as far as 1.0 defines them.
 *
 * y[m, n] = sum_k x[m, k] * w[n, k] + b[n], summed in double; x and y f32, w f32 or bf16. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <switchyard/plugin.h>

enum { WORKSPACE_BYTES = 4096 };

typedef struct fixture_ctx {
    const sy_host_api *host;
    void *workspace; /* allocated through the host at init, so that its accounting is exercised */
    unsigned calls;
} fixture_ctx;

static sy_status fail(sy_error *err, sy_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static sy_status fail(sy_error *err, sy_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(err->msg, sizeof err->msg, "fixture_v1_0_linear: ");
    vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return st;
}

static sy_status init(const sy_host_api *host, void **ctx, sy_error *err)
{
    if (!host || !SY_HAS_MEMBER(host->struct_size, sy_host_api, workspace_free))
        return fail(err, SY_E_INVALID, "host API struct_size %u does not cover workspace_free",
                    host ? host->struct_size : 0u);
    if (host->abi_major != SY_ABI_MAJOR)
        return fail(err, SY_E_INVALID, "host ABI major %u, built for %u", host->abi_major, SY_ABI_MAJOR);
    fixture_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return fail(err, SY_E_NOMEM, "no memory for the context");
    c->host = host;
    sy_status st = host->workspace_alloc(host->host, WORKSPACE_BYTES, &c->workspace, err);
    if (st != SY_OK) {
        free(c);
        return st;
    }
    *ctx = c;
    return SY_OK;
}

static void fini(void *ctx)
{
    fixture_ctx *c = ctx;
    c->host->workspace_free(c->host->host, c->workspace);
    free(c);
}

static float weight_at(const sy_tensor *w, int64_t n, int64_t k)
{
    int64_t i = n * w->stride[0] + k;
    if (w->dtype == SY_DTYPE_F32)
        return ((const float *)w->data)[i];
    uint32_t bits = (uint32_t)((const uint16_t *)w->data)[i] << 16; /* bf16 is the top half of an f32 */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int is_matrix(const sy_tensor *t, uint32_t dtype_mask, int64_t rows, int64_t cols)
{
    return t->data && (SY_DTYPE_BIT(t->dtype) & dtype_mask) && t->ndim == 2 && t->shape[0] == rows &&
           t->shape[1] == cols && t->stride[1] == 1 && t->stride[0] >= cols;
}

static sy_status linear(void *ctx, sy_stream stream, const sy_linear_args *a, sy_error *err)
{
    (void)stream;
    fixture_ctx *c = ctx;
    if (!c || !c->workspace)
        return fail(err, SY_E_INVALID, "called without the context init returned");
    /* Every member read below exists in 1.0; a newer host passes a larger struct_size. */
    if (!a || a->struct_size < sizeof *a)
        return fail(err, SY_E_INVALID, "args struct_size %u is smaller than the 1.0 sy_linear_args (%zu)",
                    a ? a->struct_size : 0u, sizeof *a);
    const int64_t M = a->x.shape[0], K = a->x.shape[1], N = a->w.shape[0];
    const uint32_t f32 = SY_DTYPE_BIT(SY_DTYPE_F32), bf16 = SY_DTYPE_BIT(SY_DTYPE_BF16);
    if (a->x.ndim != 2 || !is_matrix(&a->x, f32, M, K))
        return fail(err, SY_E_INVALID, "x must be f32 [M, K] with unit column stride (dtype %d, ndim %d)",
                    (int)a->x.dtype, (int)a->x.ndim);
    if (!is_matrix(&a->w, f32 | bf16, N, K) || a->w.stride[0] != K)
        return fail(err, SY_E_INVALID, "w must be a contiguous f32 or bf16 [N, %lld] (dtype %d, shape[1] %lld)",
                    (long long)K, (int)a->w.dtype, (long long)a->w.shape[1]);
    if (!is_matrix(&a->y, f32, M, N))
        return fail(err, SY_E_INVALID, "y must be f32 [%lld, %lld]", (long long)M, (long long)N);
    if (a->b.data && (a->b.dtype != SY_DTYPE_F32 || a->b.ndim != 1 || a->b.shape[0] != N))
        return fail(err, SY_E_INVALID, "b must be f32 [%lld]", (long long)N);
    const float *b = a->b.data;
    for (int64_t m = 0; m < M; m++) {
        const float *x = (const float *)a->x.data + m * a->x.stride[0];
        float *y = (float *)a->y.data + m * a->y.stride[0];
        for (int64_t n = 0; n < N; n++) {
            double acc = b ? b[n] : 0.0;
            for (int64_t k = 0; k < K; k++)
                acc += (double)x[k] * weight_at(&a->w, n, k);
            y[n] = (float)acc;
        }
    }
    c->calls++;
    return SY_OK;
}

static const sy_linear_caps caps = {
    .struct_size = sizeof(sy_linear_caps),
    .weight_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .act_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32),
    .has_bias = 1,
};

static const sy_linear_ops ops = {.struct_size = sizeof(sy_linear_ops), .linear = linear};

static const sy_plugin_desc desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_LINEAR,
    .name = "fixture_v1_0_linear",
    .backend = "cpu",
    .version = "1.0.0",
    .description = "built against the frozen ABI 1.0 headers",
    .rank = -100, /* never chosen under `auto` */
    .caps = &caps,
    .ops = &ops,
    .init = init,
    .fini = fini,
};

static const sy_plugin_desc *const descriptors[] = {&desc, NULL};

SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor;
    return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;
}
