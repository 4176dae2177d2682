/* norm_example: a norm plugin for the cpu backend, built outside the Switchyard tree against the
 * installed SDK alone. It implements the norm kind's one op with all three features the caps record
 * can declare:
 *
 *   s = x + residual (when a residual is given);  r = 1 / sqrt(sum_{n < N} s^2 / N + eps)
 *   out[m, n] = s * r * weight[n] for n < N;  out[m, N .. Nout) = 0;  residual_out = s
 *
 * f32 only: the caps say so, and the engine never hands this plugin anything else. Sums are kept in
 * double, so the result is within a few f32 ulps of the exact value whatever the row length. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include <switchyard/plugin.h>

#define MAX_PAD_MULTIPLE 4096u

/* Every failure is one line naming the argument and the values, and a status; never a print. */
static sy_status fail(sy_error *err, sy_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static sy_status fail(sy_error *err, sy_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err) {
        int n = snprintf(err->msg, sizeof err->msg, "norm_example rmsnorm: ");
        vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    }
    va_end(ap);
    return status;
}

/* An f32 matrix [rows, cols] whose rows may be further apart than cols (a slice of a wider one). */
static sy_status check_rows(const char *name, const sy_tensor *t, int64_t rows, int64_t cols, sy_error *err)
{
    if (!t->data)
        return fail(err, SY_E_INVALID, "%s is missing", name);
    if (t->dtype != SY_DTYPE_F32)
        return fail(err, SY_E_UNSUPPORTED, "%s has dtype %d; this plugin declares f32 only", name, (int)t->dtype);
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols)
        return fail(err, SY_E_INVALID, "%s has shape [%lld, %lld] (ndim %d), expected [%lld, %lld]", name,
                    (long long)t->shape[0], (long long)t->shape[1], (int)t->ndim, (long long)rows, (long long)cols);
    if (t->stride[1] != 1 || (rows > 1 && t->stride[0] < cols))
        return fail(err, SY_E_INVALID, "%s has strides [%lld, %lld]; rows must be dense (stride 1) and not overlap",
                    name, (long long)t->stride[0], (long long)t->stride[1]);
    return SY_OK;
}

static sy_status check_args(const sy_norm_args *a, int64_t *nout, sy_error *err)
{
    sy_status st;
    /* The host fills struct_size with its own sizeof; every member this plugin reads is in v1.0. */
    if (!a || a->struct_size < sizeof *a)
        return fail(err, SY_E_INVALID, "args struct_size %u is smaller than sy_norm_args v1.0 (%zu)",
                    a ? a->struct_size : 0u, sizeof *a);
    if (a->x.ndim != 2)
        return fail(err, SY_E_INVALID, "x has %d dimensions, expected 2 ([M, N])", (int)a->x.ndim);
    int64_t m = a->x.shape[0], n = a->x.shape[1];
    if (a->pad_to_multiple > MAX_PAD_MULTIPLE)
        return fail(err, SY_E_UNSUPPORTED, "pad_to_multiple %u is above the declared max_pad_multiple %u",
                    a->pad_to_multiple, MAX_PAD_MULTIPLE);
    int64_t p = a->pad_to_multiple > 1 ? a->pad_to_multiple : 1;
    *nout = (n + p - 1) / p * p;
    if (!isfinite(a->eps) || a->eps < 0.0f)
        return fail(err, SY_E_INVALID, "eps %g must be finite and >= 0", (double)a->eps);
    if ((st = check_rows("x", &a->x, m, n, err)) != SY_OK || (st = check_rows("out", &a->out, m, *nout, err)) != SY_OK)
        return st;
    const sy_tensor *w = &a->weight;
    if (!w->data || w->dtype != SY_DTYPE_F32 || w->ndim != 1 || w->shape[0] != n || w->stride[0] != 1)
        return fail(err, w->data && w->dtype != SY_DTYPE_F32 ? SY_E_UNSUPPORTED : SY_E_INVALID,
                    "weight must be a dense f32 [%lld] (data %s, dtype %d, ndim %d, shape[0] %lld)", (long long)n,
                    w->data ? "set" : "NULL", (int)w->dtype, (int)w->ndim, (long long)w->shape[0]);
    if (a->residual.data) {
        if ((st = check_rows("residual", &a->residual, m, n, err)) != SY_OK)
            return st;
        if (!a->residual_out.data)
            return fail(err, SY_E_INVALID, "residual is given but residual_out is missing");
    }
    if (a->residual_out.data && (st = check_rows("residual_out", &a->residual_out, m, n, err)) != SY_OK)
        return st;
    return SY_OK;
}

static float *row(const sy_tensor *t, int64_t m)
{
    return (float *)t->data + m * t->stride[0];
}

/* Each element is read before it is written, so residual_out may be the residual itself (the
 * engine updates its residual stream in place) and out may be x. */
static sy_status rmsnorm(void *ctx, sy_stream stream, const sy_norm_args *a, sy_error *err)
{
    (void)ctx;    /* no init: the host passes NULL */
    (void)stream; /* the cpu backend's streams are synchronous: the work is done on return */
    int64_t nout = 0;
    sy_status st = check_args(a, &nout, err);
    if (st != SY_OK)
        return st;
    const int64_t rows = a->x.shape[0], n = a->x.shape[1];
    const float *weight = a->weight.data;
    for (int64_t m = 0; m < rows; m++) {
        const float *x = row(&a->x, m);
        const float *res = a->residual.data ? row(&a->residual, m) : NULL;
        float *out = row(&a->out, m);
        float *res_out = a->residual_out.data ? row(&a->residual_out, m) : NULL;
        double squares = 0.0;
        for (int64_t i = 0; i < n; i++) {
            float s = res ? x[i] + res[i] : x[i];
            squares += (double)s * s;
        }
        double r = n > 0 ? 1.0 / sqrt(squares / (double)n + a->eps) : 0.0;
        for (int64_t i = 0; i < n; i++) {
            float s = res ? x[i] + res[i] : x[i];
            out[i] = (float)(s * r * weight[i]);
            if (res_out)
                res_out[i] = s;
        }
        for (int64_t i = n; i < nout; i++)
            out[i] = 0.0f;
    }
    return SY_OK;
}

static const sy_norm_caps caps = {
    .struct_size = sizeof(sy_norm_caps),
    .features = SY_NORM_RMSNORM | SY_NORM_FUSED_ADD | SY_NORM_PAD_TO_MULTIPLE,
    .dtypes = SY_DTYPE_BIT(SY_DTYPE_F32),
    .max_pad_multiple = MAX_PAD_MULTIPLE,
};

static const sy_norm_ops ops = {
    .struct_size = sizeof(sy_norm_ops),
    .rmsnorm = rmsnorm,
};

static const sy_plugin_desc desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_NORM,
    .name = "norm_example",
    .backend = "cpu",
    .version = "1.0.0",
    .description = "example third-party RMSNorm (fused add, zero padding), f32, double sums",
    .rank = -1, /* below the in-tree norm under `auto`: it runs when a config names it (or when no other norm fits) */
    .caps = &caps,
    .ops = &ops,
};

static const sy_plugin_desc *const descriptors[] = {&desc, NULL};

SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    /* Any host of the same major with a minor at least ours can use this descriptor (the host
     * checks the minor too); another major gets nothing. */
    (void)host_abi_minor;
    return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;
}
