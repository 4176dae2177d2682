/* NeoX RoPE with YaRN (plugins/common/sy_rope.h) on the host, and the fused form that also stores
 * the rotated K and V into the KV pool. On the host the fused form is the rotation followed by the
 * kv plugins' own writer (plugins/common/kv_store_cpu.c) in one call: its pool, q and k are those of
 * rope followed by kv_layout.write bit for bit, and so is its behaviour on a bad slot (q and k
 * rotated, the pool untouched, since the writer checks every slot before storing any). A single
 * pass saves nothing measurable here; on a GPU it saves a kernel launch and a round trip of K. */
#include "cpu.h"

#include <math.h>
#include <string.h>

#include "kv_store_cpu.h"
#include "sy_numeric.h"
#include "sy_op_check.h"
#include "sy_rope.h"

#define ACT_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

static sy_status check_params(const char *op, const sy_rope_params *p, sy_error *err)
{
    if (p->struct_size < sizeof *p)
        return sy_op_fail(err, SY_E_INVALID, "%s: params struct_size %u is smaller than sy_rope_params (%zu)", op,
                          p->struct_size, sizeof *p);
    if (p->style != SY_ROPE_STYLE_NEOX)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: params.style 0x%x is not neox (0x%x), the only style served", op,
                          p->style, SY_ROPE_STYLE_NEOX);
    if (p->scaling != SY_ROPE_SCALING_YARN && p->scaling != SY_ROPE_SCALING_NONE)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: params.scaling 0x%x is neither yarn (0x%x) nor none (0x%x)", op,
                          p->scaling, SY_ROPE_SCALING_YARN, SY_ROPE_SCALING_NONE);
    if (p->head_dim == 0 || p->head_dim % 2 || p->head_dim > SY_ROPE_YARN_CPU_MAX_HEAD_DIM)
        return sy_op_fail(err, SY_E_INVALID, "%s: params.head_dim %u must be even and in 2..%d", op, p->head_dim,
                          SY_ROPE_YARN_CPU_MAX_HEAD_DIM);
    if (!(p->theta > 1.0f) || isinf(p->theta))
        return sy_op_fail(err, SY_E_INVALID, "%s: params.theta %g must be finite and > 1", op, (double)p->theta);
    if (!isfinite(p->concentration))
        return sy_op_fail(err, SY_E_INVALID, "%s: params.concentration %g is not finite", op, (double)p->concentration);
    if (p->scaling == SY_ROPE_SCALING_YARN) {
        if (!(p->yarn_factor >= 1.0f) || isinf(p->yarn_factor))
            return sy_op_fail(err, SY_E_INVALID, "%s: params.yarn_factor %g must be finite and >= 1", op,
                              (double)p->yarn_factor);
        if (!sy_rope_uses_yarn(p))
            return SY_OK;
        if (!(p->yarn_beta_slow > 0.0f) || !(p->yarn_beta_fast > p->yarn_beta_slow) || isinf(p->yarn_beta_fast) ||
            p->yarn_original_max_position == 0)
            return sy_op_fail(err, SY_E_INVALID,
                              "%s: YaRN needs beta_fast > beta_slow > 0 and original_max_position > 0; got beta_fast "
                              "%g, beta_slow %g, original_max_position %u",
                              op, (double)p->yarn_beta_fast, (double)p->yarn_beta_slow, p->yarn_original_max_position);
    }
    return SY_OK;
}

/* q [T, Hq, D] and k [T, Hkv, D]: any token and head strides, unit stride along D. */
static sy_status check_heads(const char *op, const char *name, const sy_tensor *t, int64_t T, uint32_t D, sy_error *err)
{
    int64_t want[3] = {T, SY_ANY_DIM, D};
    sy_status st = sy_op_check_tensor(op, name, t, ACT_DTYPES, 3, want, err);
    if (st == SY_OK && t->shape[2] > 1 && t->stride[2] != 1)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %s has stride %lld along head_dim, expected 1", op, name,
                          (long long)t->stride[2]);
    return st;
}

static sy_status check_rope(const char *op, const sy_rope_args *a, sy_error *err)
{
    if (a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_rope_args (%zu)", op,
                          a->struct_size, sizeof *a);
    sy_status st = check_params(op, &a->params, err);
    if (st != SY_OK)
        return st;
    int64_t want_pos[1] = {SY_ANY_DIM};
    st = sy_op_check_tensor(op, "positions", &a->positions, SY_DTYPE_BIT(SY_DTYPE_I32), 1, want_pos, err);
    if (st == SY_OK)
        st = check_heads(op, "q", &a->q, a->positions.shape[0], a->params.head_dim, err);
    if (st == SY_OK)
        st = check_heads(op, "k", &a->k, a->positions.shape[0], a->params.head_dim, err);
    return st;
}

static float load(const void *p, int32_t dtype, int64_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void store(void *p, int32_t dtype, int64_t i, float v)
{
    if (dtype == SY_DTYPE_BF16)
        ((uint16_t *)p)[i] = sy_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* Rotates every head of token t of `x` in place with the token's cos / sin. */
static void rotate_token(const sy_tensor *x, int64_t t, uint32_t half, const float *cos_t, const float *sin_t)
{
    size_t es = sy_dtype_size(x->dtype);
    for (int64_t h = 0; h < x->shape[1]; h++) {
        void *row = (uint8_t *)x->data + (size_t)(t * x->stride[0] + h * x->stride[1]) * es;
        for (uint32_t i = 0; i < half; i++) {
            float x1 = load(row, x->dtype, i), x2 = load(row, x->dtype, i + half);
            store(row, x->dtype, i, x1 * cos_t[i] - x2 * sin_t[i]);
            store(row, x->dtype, i + half, x2 * cos_t[i] + x1 * sin_t[i]);
        }
    }
}

/* Rotates q and k of tokens [t0, t1). inv_freq holds head_dim / 2 frequencies. */
static void rope_tokens(const sy_rope_args *a, const double *inv_freq, double concentration, int64_t t0, int64_t t1)
{
    const uint32_t half = a->params.head_dim / 2;
    float cos_t[SY_ROPE_YARN_CPU_MAX_HEAD_DIM / 2], sin_t[SY_ROPE_YARN_CPU_MAX_HEAD_DIM / 2];
    const int32_t *pos = a->positions.data;
    for (int64_t t = t0; t < t1; t++) {
        double p = pos[t * a->positions.stride[0]];
        for (uint32_t i = 0; i < half; i++) {
            double angle = p * inv_freq[i];
            cos_t[i] = (float)(cos(angle) * concentration);
            sin_t[i] = (float)(sin(angle) * concentration);
        }
        rotate_token(&a->q, t, half, cos_t, sin_t);
        rotate_token(&a->k, t, half, cos_t, sin_t);
    }
}

static void frequencies(const sy_rope_params *p, double *inv_freq)
{
    for (uint32_t i = 0; i < p->head_dim / 2; i++)
        inv_freq[i] = sy_rope_inv_freq(p, i);
}

static sy_status rope(void *ctx, sy_stream stream, const sy_rope_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    if (!a)
        return sy_op_fail(err, SY_E_INVALID, "rope: args is NULL");
    sy_status st = check_rope("rope", a, err);
    if (st != SY_OK)
        return st;
    double inv_freq[SY_ROPE_YARN_CPU_MAX_HEAD_DIM / 2];
    frequencies(&a->params, inv_freq);
    rope_tokens(a, inv_freq, sy_rope_concentration(&a->params), 0, a->positions.shape[0]);
    return SY_OK;
}

static int same_view(const sy_tensor *x, const sy_tensor *y)
{
    if (x->data != y->data || x->dtype != y->dtype || x->ndim != y->ndim)
        return 0;
    for (int32_t i = 0; i < x->ndim; i++)
        if (x->shape[i] != y->shape[i] || x->stride[i] != y->stride[i])
            return 0;
    return 1;
}

static sy_status rope_kv_write(void *ctx, sy_stream stream, const sy_rope_kv_write_args *a, sy_error *err)
{
    static const char op[] = "rope_kv_write";
    (void)ctx;
    (void)stream;
    if (!a || a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_rope_kv_write_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof *a);
    const sy_rope_args *r = &a->rope;
    const sy_kv_write_args *kv = &a->kv;
    sy_status st = check_rope(op, r, err);
    if (st != SY_OK)
        return st;
    const uint32_t layout = kv->geom.layout;
    if (layout != SY_LAYOUT_NHD && layout != SY_LAYOUT_VECTORIZED_5D)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: kv.geom.layout %u is neither nhd (%d) nor vectorized_5d (%d)", op,
                          layout, SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D);
    if (!same_view(&kv->k, &r->k))
        return sy_op_fail(err, SY_E_INVALID, "%s: kv.k must be the same view as rope.k (the rotated keys)", op);
    const int64_t T = r->positions.shape[0];
    if (kv->slots.ndim != 1 || kv->slots.shape[0] != T)
        return sy_op_fail(err, SY_E_INVALID, "%s: kv.slots must be 1-d with one slot per token (%lld), got ndim %d", op,
                          (long long)T, (int)kv->slots.ndim);
    int64_t want_kv[3] = {T, kv->geom.kv_heads, kv->geom.head_dim};
    st = sy_op_check_tensor(op, "kv.k", &kv->k, ACT_DTYPES, 3, want_kv, err);
    if (st == SY_OK)
        st = sy_op_check_tensor(op, "kv.v", &kv->v, ACT_DTYPES, 3, want_kv, err);
    sy_kv_geometry g = kv->geom;
    if (st == SY_OK)
        st = sy_kv_cpu_geometry(layout, &g, err);
    if (st != SY_OK)
        return st;

    double inv_freq[SY_ROPE_YARN_CPU_MAX_HEAD_DIM / 2];
    frequencies(&r->params, inv_freq);
    rope_tokens(r, inv_freq, sy_rope_concentration(&r->params), 0, T);
    return sy_kv_cpu_write(layout, kv, err);
}

const sy_rope_ops sy_rope_yarn_cpu_ops = {sizeof(sy_rope_ops), 0, rope, rope_kv_write};
