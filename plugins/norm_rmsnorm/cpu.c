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
#include "args.h"

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
    sy_status st = sy_norm_rmsnorm_check_args(a, ACT_DTYPES, INT64_MAX, &nout, err);
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
