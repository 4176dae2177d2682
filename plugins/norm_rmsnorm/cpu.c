/* RMSNorm with optional fused residual add and zero padding, on the host.
 *
 *   s = f32(x) (+ f32(residual));  r = 1 / sqrt(sum_{n<N} s^2 / N + eps);
 *   out[n < N] = cast(s * r * w[n]);  out[N .. Nout) = 0;  residual_out = cast(s).
 * Source: AITER fused_add_rmsnorm_pad (normalization/fused_add_rmsnorm_pad.py) as summarized in
 * shared/reference/moe-mxfp4-norm.md: the sum is over the N real columns in fp32, s stays unrounded
 * for the normalization (vLLM's fused_add_rms_norm rounds the residual first; flashinfer and SGLang
 * do not, and neither do we), and the residual is written once, rounded to its own dtype. */
#include "cpu.h"

#include <math.h>
#include <string.h>

#include "sy_numeric.h"
#include "sy_op_check.h"

#define ACT_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

/* Row accessors for the two activation dtypes. */
static float load(const void *row, int32_t dtype, int64_t n)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)row)[n]) : ((const float *)row)[n];
}

static void store(void *row, int32_t dtype, int64_t n, float v)
{
    if (dtype == SY_DTYPE_BF16)
        ((uint16_t *)row)[n] = sy_f32_to_bf16(v);
    else
        ((float *)row)[n] = v;
}

static void *row_of(const sy_tensor *t, int64_t m)
{
    return (uint8_t *)t->data + m * t->stride[0] * (int64_t)sy_dtype_size(t->dtype);
}

static sy_status check_matrix(const char *name, const sy_tensor *t, int64_t M, int64_t N, sy_error *err)
{
    static const char op[] = "norm rmsnorm";
    int64_t want[2] = {M, N};
    return sy_op_check_dense_tensor(op, name, t, ACT_DTYPES, 2, want, 1, err);
}

static sy_status check_args(const sy_norm_args *a, int64_t *nout, sy_error *err)
{
    static const char op[] = "norm rmsnorm";
    if (!a || a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_norm_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof *a);
    if (a->x.ndim != 2)
        return sy_op_fail(err, SY_E_INVALID, "%s: x has %d dimensions, expected 2 ([M, N])", op, (int)a->x.ndim);
    const int64_t M = a->x.shape[0], N = a->x.shape[1];
    if (a->pad_to_multiple > SY_NORM_RMSNORM_CPU_MAX_PAD)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: pad_to_multiple %u exceeds the supported %d", op,
                          a->pad_to_multiple, SY_NORM_RMSNORM_CPU_MAX_PAD);
    const int64_t p = a->pad_to_multiple > 1 ? a->pad_to_multiple : 1;
    *nout = (N + p - 1) / p * p;
    if (!(a->eps >= 0.0f) || isinf(a->eps))
        return sy_op_fail(err, SY_E_INVALID, "%s: eps %g must be finite and >= 0", op, (double)a->eps);
    sy_status st = check_matrix("x", &a->x, M, N, err);
    int64_t want_w[1] = {N};
    if (st == SY_OK)
        st = sy_op_check_dense_tensor(op, "weight", &a->weight, ACT_DTYPES, 1, want_w, 0, err);
    if (st == SY_OK)
        st = check_matrix("out", &a->out, M, *nout, err);
    if (st == SY_OK && a->residual.data)
        st = check_matrix("residual", &a->residual, M, N, err);
    if (st == SY_OK && a->residual.data && !a->residual_out.data)
        return sy_op_fail(err, SY_E_INVALID, "%s: residual is given but residual_out is missing", op);
    if (st == SY_OK && a->residual_out.data)
        st = check_matrix("residual_out", &a->residual_out, M, N, err);
    return st;
}

/* Eight partial sums, combined pairwise: a fixed order, and less rounding than one running sum. */
static float sum_of_squares(const void *x, int32_t xt, const void *res, int32_t rt, int64_t N)
{
    float part[8] = {0};
    for (int64_t n = 0; n < N; n++) {
        float s = load(x, xt, n) + (res ? load(res, rt, n) : 0.0f);
        part[n % 8] += s * s;
    }
    return ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
}

static sy_status rmsnorm(void *ctx, sy_stream stream, const sy_norm_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    int64_t nout = 0;
    sy_status st = check_args(a, &nout, err);
    if (st != SY_OK)
        return st;
    const int64_t M = a->x.shape[0], N = a->x.shape[1];
    const int32_t xt = a->x.dtype, rt = a->residual.dtype, ot = a->out.dtype, wt = a->weight.dtype;
    for (int64_t m = 0; m < M; m++) {
        const void *x = row_of(&a->x, m);
        const void *res = a->residual.data ? row_of(&a->residual, m) : NULL;
        void *out = row_of(&a->out, m);
        void *res_out = a->residual_out.data ? row_of(&a->residual_out, m) : NULL;
        float r = 1.0f / sqrtf(sum_of_squares(x, xt, res, rt, N) / (float)N + a->eps);
        /* Element n is read before it is written, so residual_out may alias residual (and out x). */
        for (int64_t n = 0; n < N; n++) {
            float s = load(x, xt, n) + (res ? load(res, rt, n) : 0.0f);
            store(out, ot, n, s * r * load(a->weight.data, wt, n));
            if (res_out)
                store(res_out, a->residual_out.dtype, n, s);
        }
        for (int64_t n = N; n < nout; n++)
            store(out, ot, n, 0.0f);
    }
    return SY_OK;
}

const sy_norm_ops sy_norm_rmsnorm_cpu_ops = {sizeof(sy_norm_ops), 0, rmsnorm};
