/* An attention plugin written apart from attn_paged, to show that the suite's tolerances admit a
 * kernel with other arithmetic: plain loops, a two-pass softmax, sums in the opposite order, and
 * the precision a GPU kernel picks for its tensor cores, decided by the call's narrowest operand:
 *   f32 operands only:  everything in f32
 *   a bf16 operand:     q and the softmax weights P rounded to bf16 before their products
 *   an fp8 KV operand:  additionally P quantized to e4m3 (scaled by 256) before P.V, q kept in bf16
 *                       (built with CONF_LOWP_FP8_Q, q is quantized to e4m3 with a per-row scale
 *                       as well: docs/conformance.md gives what that costs)
 * The denominator sums the unrounded weights, as flash-attention kernels do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_plugin.h"
#include "sy_kv_addr.h"
#include "sy_numeric.h"

static const sy_attention_caps caps = CONF_ATTENTION_CAPS_ALL;

enum { FULL = 0, HALF = 1, QUARTER = 2 }; /* precision tiers: f32, bf16, fp8 */

static int tier_of(int32_t q_dtype, int32_t kv_dtype)
{
    if (kv_dtype == SY_DTYPE_FP8_E4M3)
        return QUARTER;
    return q_dtype == SY_DTYPE_BF16 || kv_dtype == SY_DTYPE_BF16 ? HALF : FULL;
}

static float load(int32_t dtype, const void *p, uint64_t i, float scale)
{
    switch (dtype) {
    case SY_DTYPE_BF16: return sy_bf16_to_f32(((const uint16_t *)p)[i]);
    case SY_DTYPE_FP8_E4M3: return sy_fp8e4m3_to_f32(((const uint8_t *)p)[i]) * scale;
    default: return ((const float *)p)[i];
    }
}

static float quantize_fp8(float x, float scale)
{
    return sy_fp8e4m3_to_f32(sy_f32_to_fp8e4m3(x / scale)) * scale;
}

/* One query row's q as the tier computes with it. */
static void prepare_q(int tier, const float *src, uint32_t d, float *q)
{
    float amax = 0;
    for (uint32_t i = 0; i < d; i++) {
        q[i] = tier == FULL ? src[i] : sy_round_bf16(src[i]);
        amax = fabsf(q[i]) > amax ? fabsf(q[i]) : amax;
    }
#ifdef CONF_LOWP_FP8_Q
    if (tier == QUARTER && amax > 0)
        for (uint32_t i = 0; i < d; i++)
            q[i] = quantize_fp8(q[i], amax / 448.0f);
#else
    (void)amax;
#endif
}

static float weight_for_pv(int tier, float p)
{
    if (tier == QUARTER)
        return quantize_fp8(p, 1.0f / 256.0f);
    return tier == HALF ? sy_round_bf16(p) : p;
}

/* Where key j of the row lives: a (K, V) element offset pair for dim d. */
typedef struct keys {
    int32_t dtype;
    const void *k, *v;
    float k_scale, v_scale;
    sy_kv_dims dims;           /* paged */
    const int32_t *block_table;
    int64_t row0, k_stride[2], v_stride[2]; /* linear */
    uint32_t head;
} keys;

static void offsets(const keys *kv, int64_t j, uint32_t d, uint64_t *ko, uint64_t *vo)
{
    if (kv->block_table) {
        int64_t slot = (int64_t)kv->block_table[j / kv->dims.page_size] * kv->dims.page_size + j % kv->dims.page_size;
        *ko = sy_kv_k_offset(&kv->dims, slot, kv->head, d);
        *vo = sy_kv_v_offset(&kv->dims, slot, kv->head, d);
    } else {
        *ko = (uint64_t)((kv->row0 + j) * kv->k_stride[0] + kv->head * kv->k_stride[1] + d);
        *vo = (uint64_t)((kv->row0 + j) * kv->v_stride[0] + kv->head * kv->v_stride[1] + d);
    }
}

/* out[d] for keys [lo, hi), visited from the last to the first. */
static void attend(const keys *kv, const float *q, uint32_t d_model, int64_t lo, int64_t hi, float scale,
                   const float *sink, int tier, float *scores, float *out)
{
    float m = sink ? *sink : -INFINITY;
    for (int64_t j = hi - 1; j >= lo; j--) {
        float s = 0;
        for (uint32_t d = d_model; d > 0; d--) {
            uint64_t ko, vo;
            offsets(kv, j, d - 1, &ko, &vo);
            s += q[d - 1] * load(kv->dtype, kv->k, ko, kv->k_scale);
        }
        scores[j - lo] = s * scale;
        m = scores[j - lo] > m ? scores[j - lo] : m;
    }
    float l = sink ? expf(*sink - m) : 0.0f;
    for (uint32_t d = 0; d < d_model; d++)
        out[d] = 0;
    for (int64_t j = hi - 1; j >= lo; j--) {
        float p = expf(scores[j - lo] - m);
        l += p;
        float w = weight_for_pv(tier, p);
        for (uint32_t d = 0; d < d_model; d++) {
            uint64_t ko, vo;
            offsets(kv, j, d, &ko, &vo);
            out[d] += w * load(kv->dtype, kv->v, vo, kv->v_scale);
        }
    }
    for (uint32_t d = 0; d < d_model; d++)
        out[d] = l > 0 ? out[d] / l : 0.0f;
}

static void store_row(const sy_tensor *t, int64_t row, int64_t head, const float *src, uint32_t d)
{
    int64_t base = row * t->stride[0] + head * t->stride[1];
    for (uint32_t i = 0; i < d; i++) {
        if (t->dtype == SY_DTYPE_BF16)
            ((uint16_t *)t->data)[base + i] = sy_f32_to_bf16(src[i]);
        else
            ((float *)t->data)[base + i] = src[i];
    }
}

static void load_row(const sy_tensor *t, int64_t row, int64_t head, uint32_t d, float *dst)
{
    int64_t base = row * t->stride[0] + head * t->stride[1];
    for (uint32_t i = 0; i < d; i++)
        dst[i] = load(t->dtype, t->data, (uint64_t)(base + i), 1.0f);
}

/* Scratch for a call: scores for every key, and three head-dim rows. */
static float *scratch_for(int64_t keys_max, uint32_t d, sy_error *err)
{
    float *s = malloc(((size_t)keys_max + 3u * d + 1) * sizeof(float));
    if (!s)
        snprintf(err->msg, sizeof err->msg, "fixture: out of memory");
    return s;
}

static sy_status decode(void *ctx, sy_stream stream, const sy_attn_decode_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    const sy_kv_geometry *g = &a->geom;
    const uint32_t D = g->head_dim, group = (uint32_t)(a->q.shape[1] / g->kv_heads);
    const int32_t *lens = a->context_lens.data;
    int64_t longest = 0;
    for (int64_t b = 0; b < a->q.shape[0]; b++)
        longest = lens[b] > longest ? lens[b] : longest;
    float *scores = scratch_for(longest, D, err);
    if (!scores)
        return SY_E_NOMEM;
    float *src = scores + longest, *q = src + D, *out = q + D;
    keys kv = {g->store_dtype, a->k_cache, a->v_cache, a->k_scale, a->v_scale, sy_kv_dims_of(g), NULL, 0, {0}, {0}, 0};
    kv.dims.vec = sy_kv_vec_for(g->layout, g->store_dtype);
    int tier = tier_of(a->q.dtype, g->store_dtype);
    for (int64_t b = 0; b < a->q.shape[0]; b++) {
        int64_t len = lens[b], lo = a->window > 0 && len > a->window ? len - a->window : 0;
        kv.block_table = (const int32_t *)a->block_tables.data + b * a->block_tables.stride[0];
        for (int64_t hq = 0; hq < a->q.shape[1]; hq++) {
            kv.head = (uint32_t)(hq / group);
            load_row(&a->q, b, hq, D, src);
            prepare_q(tier, src, D, q);
            attend(&kv, q, D, lo, len, a->scale, a->sinks.data ? (const float *)a->sinks.data + hq : NULL, tier,
                   scores, out);
            store_row(&a->out, b, hq, out, D);
        }
    }
    free(scores);
    return SY_OK;
}

static sy_status prefill(void *ctx, sy_stream stream, const sy_attn_prefill_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    const uint32_t D = (uint32_t)a->k.shape[2], group = (uint32_t)(a->q.shape[1] / a->k.shape[1]);
    const int32_t *cu_q = a->cu_seqlens_q.data, *cu_k = a->cu_seqlens_k.data;
    float *scores = scratch_for(a->k.shape[0], D, err);
    if (!scores)
        return SY_E_NOMEM;
    float *src = scores + a->k.shape[0], *q = src + D, *out = q + D;
    keys kv = {a->k.dtype, a->k.data, a->v.data, a->k_scale, a->v_scale, {0}, NULL, 0,
               {a->k.stride[0], a->k.stride[1]}, {a->v.stride[0], a->v.stride[1]}, 0};
    int tier = tier_of(a->q.dtype, a->k.dtype);
    for (int64_t b = 0; b + 1 < a->cu_seqlens_q.shape[0]; b++) {
        int64_t lq = cu_q[b + 1] - cu_q[b], lk = cu_k[b + 1] - cu_k[b];
        kv.row0 = cu_k[b];
        for (int64_t i = 0; i < lq; i++) {
            int64_t pos = lk - lq + i;
            int64_t hi = a->causal || a->window > 0 ? pos + 1 : lk;
            int64_t lo = a->window > 0 && pos + 1 > a->window ? pos + 1 - a->window : 0;
            for (int64_t hq = 0; hq < a->q.shape[1]; hq++) {
                kv.head = (uint32_t)(hq / group);
                load_row(&a->q, cu_q[b] + i, hq, D, src);
                prepare_q(tier, src, D, q);
                attend(&kv, q, D, lo, hi, a->scale, a->sinks.data ? (const float *)a->sinks.data + hq : NULL, tier,
                       scores, out);
                store_row(&a->out, cu_q[b] + i, hq, out, D);
            }
        }
    }
    free(scores);
    return SY_OK;
}

static const sy_attention_ops ops = {sizeof(sy_attention_ops), 0, decode, prefill, NULL};

CONF_FIXTURE_ENTRY(SY_KIND_ATTENTION, CONF_FIXTURE_NAME, &caps, &ops, NULL, NULL)
