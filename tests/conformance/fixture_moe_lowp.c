/* An MXFP4 MoE plugin written apart from the in-tree one, to show that the suite's MoE tolerances
 * admit other arithmetic: its "prepared" buffer is the checkpoint itself (biases as f32), and the
 * forward decodes each weight where it is used and sums in plain row order (the reference decodes
 * tiles and multiplies them with sgemm). With bf16 activations it also rounds the swiglu output to
 * bf16 before the down projection, as an a16w4 GPU kernel feeding bf16 tensor cores does. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fixture_plugin.h"
#include "moe_route.h"
#include "sy_mxfp4.h"
#include "sy_numeric.h"

static const sy_moe_caps caps = {
    .struct_size = sizeof(sy_moe_caps),
    .weight_format = SY_MOE_WEIGHTS_MXFP4,
    .gate_up_layout = SY_MOE_GATE_UP_INTERLEAVE,
    .input_alignment = 256,
    .accepts_padded_input = 1,
    .max_tp = 1,
    .max_experts = 1024,
    .max_top_k = SY_MOE_MAX_TOP_K,
    .act_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
};

/* The buffer: this header, then w13 blocks, w13 scales, w2 blocks, w2 scales (checkpoint order),
 * then f32 w13 bias [E][2I] and w2 bias [E][H]. */
typedef struct layout {
    uint64_t w13_blocks, w13_scales, w2_blocks, w2_scales, w13_bias, w2_bias, total;
} layout;

static layout layout_of(const sy_moe_shape *s)
{
    uint64_t E = s->num_experts, H = s->hidden, I = s->intermediate;
    layout l;
    l.w13_blocks = 64;
    l.w13_scales = l.w13_blocks + E * 2 * I * H / 2;
    l.w2_blocks = l.w13_scales + E * 2 * I * H / SY_MXFP4_BLOCK;
    l.w2_scales = l.w2_blocks + E * H * I / 2;
    l.w13_bias = (l.w2_scales + E * H * I / SY_MXFP4_BLOCK + 3) / 4 * 4;
    l.w2_bias = l.w13_bias + E * 2 * I * 4;
    l.total = l.w2_bias + E * H * 4;
    return l;
}

static sy_status prepared_bytes(const sy_moe_shape *s, uint64_t *bytes, sy_error *err)
{
    (void)err;
    *bytes = layout_of(s).total;
    return SY_OK;
}

static float element(int32_t dtype, const void *p, uint64_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static sy_status prepare(void *ctx, sy_stream stream, const sy_moe_prepare_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    (void)err;
    const sy_moe_shape *s = &a->shape;
    layout l = layout_of(s);
    uint8_t *p = a->prepared;
    uint64_t E = s->num_experts, H = s->hidden, I = s->intermediate;
    memcpy(p, s, sizeof *s);
    memcpy(p + l.w13_blocks, a->w13_blocks.data, l.w13_scales - l.w13_blocks);
    memcpy(p + l.w13_scales, a->w13_scales.data, l.w2_blocks - l.w13_scales);
    memcpy(p + l.w2_blocks, a->w2_blocks.data, l.w2_scales - l.w2_blocks);
    memcpy(p + l.w2_scales, a->w2_scales.data, E * H * I / SY_MXFP4_BLOCK);
    float *b13 = (float *)(p + l.w13_bias), *b2 = (float *)(p + l.w2_bias);
    for (uint64_t i = 0; i < E * 2 * I; i++)
        b13[i] = element(a->w13_bias.dtype, a->w13_bias.data, i);
    for (uint64_t i = 0; i < E * H; i++)
        b2[i] = element(a->w2_bias.dtype, a->w2_bias.data, i);
    return SY_OK;
}

static sy_status route(void *ctx, sy_stream stream, const sy_moe_route_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    (void)err;
    const uint32_t E = a->shape.num_experts, k = a->shape.top_k;
    for (int64_t t = 0; t < a->logits.shape[0]; t++)
        sy_moe_route_token((const float *)a->logits.data + t * a->logits.stride[0], E, k,
                           (int32_t *)a->topk_ids.data + t * k, (float *)a->topk_weights.data + t * k);
    return SY_OK;
}

/* Row `row` of an [rows, K] MXFP4 matrix times v[K], in order. */
static float dot_row(const uint8_t *blocks, const uint8_t *scales, uint64_t row, uint32_t K, const float *v)
{
    float s = 0;
    uint32_t nb = K / SY_MXFP4_BLOCK;
    for (uint32_t j = 0; j < K; j++) {
        uint64_t b = row * nb + j / SY_MXFP4_BLOCK;
        s += sy_mxfp4_element(blocks + b * SY_MXFP4_BLOCK_BYTES, scales[b], j % SY_MXFP4_BLOCK) * v[j];
    }
    return s;
}

static sy_status forward(void *ctx, sy_stream stream, const sy_moe_forward_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    const sy_moe_shape *s = &a->shape;
    const layout l = layout_of(s);
    const uint8_t *p = a->prepared;
    const uint32_t H = s->hidden, I = s->intermediate, k = s->top_k;
    enum { MAX_DIM = 8192 };
    if (H > MAX_DIM || I > MAX_DIM) {
        snprintf(err->msg, sizeof err->msg, "fixture: hidden %u / intermediate %u above %d", H, I, MAX_DIM);
        return SY_E_UNSUPPORTED;
    }
    static float x[MAX_DIM], act[MAX_DIM], acc[MAX_DIM];
    const int half = a->x.dtype == SY_DTYPE_BF16;
    for (int64_t t = 0; t < a->x.shape[0]; t++) {
        for (uint32_t n = 0; n < H; n++) {
            x[n] = element(a->x.dtype, a->x.data, (uint64_t)(t * a->x.stride[0] + n));
            acc[n] = 0;
        }
        for (uint32_t j = 0; j < k; j++) {
            uint64_t e = (uint64_t)((const int32_t *)a->topk_ids.data)[t * k + j];
            float w = ((const float *)a->topk_weights.data)[t * k + j];
            const float *b13 = (const float *)(p + l.w13_bias) + e * 2 * I, *b2 = (const float *)(p + l.w2_bias) + e * H;
            for (uint32_t i = 0; i < I; i++) {
                /* checkpoint rows interleave gate (2i) and up (2i + 1) */
                float g = dot_row(p + l.w13_blocks, p + l.w13_scales, e * 2 * I + 2 * i, H, x) + b13[2 * i];
                float u = dot_row(p + l.w13_blocks, p + l.w13_scales, e * 2 * I + 2 * i + 1, H, x) + b13[2 * i + 1];
                g = g > s->swiglu_limit ? s->swiglu_limit : g;
                u = u > s->swiglu_limit ? s->swiglu_limit : u < -s->swiglu_limit ? -s->swiglu_limit : u;
                act[i] = g / (1.0f + expf(-s->swiglu_alpha * g)) * (u + 1.0f);
                if (half)
                    act[i] = sy_round_bf16(act[i]);
            }
            for (uint32_t n = 0; n < H; n++)
                acc[n] += w * (dot_row(p + l.w2_blocks, p + l.w2_scales, e * H + n, I, act) + b2[n]);
        }
        for (uint32_t n = 0; n < H; n++) {
            uint64_t o = (uint64_t)(t * a->out.stride[0] + n);
            if (half)
                ((uint16_t *)a->out.data)[o] = sy_f32_to_bf16(acc[n]);
            else
                ((float *)a->out.data)[o] = acc[n];
        }
    }
    return SY_OK;
}

static const sy_moe_ops ops = {sizeof(sy_moe_ops), 0, prepared_bytes, prepare, route, forward};

CONF_FIXTURE_ENTRY(SY_KIND_MOE, CONF_FIXTURE_NAME, &caps, &ops, NULL, NULL)
