/* Synthetic gpt-oss checkpoints in the HF layout. Magnitudes follow what trained checkpoints look
 * like so that activations stay in a realistic range through many layers: dense weights uniform
 * with unit output variance (sqrt(3 / fan_in)), biases within +-0.02, norm weights within 1 +- 0.1,
 * sinks within +-2, MXFP4 scale exponents spread over six octaves (2^-5 .. 2^0 before a
 * 1/sqrt(fan_in) shift). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"
#include "sy_numeric.h"
#include "sy_synth.h"
#include "util/strbuf.h"

uint64_t sy_ckpt_numel(const sy_model_dims *d, uint32_t layer, uint32_t kind)
{
    uint64_t H = d->hidden, D = d->head_dim, Hq = d->q_heads, Hkv = d->kv_heads, E = d->experts, I = d->intermediate;
    if (layer == SY_GLOBAL_LAYER) {
        switch (kind) {
        case SY_T_EMBED: return (uint64_t)d->vocab * H;
        case SY_T_FINAL_NORM: return H;
        case SY_T_LM_HEAD: return (uint64_t)d->vocab * H;
        default: return 0;
        }
    }
    switch (kind) {
    case SY_T_Q_W: return Hq * D * H;
    case SY_T_Q_B: return Hq * D;
    case SY_T_K_W: case SY_T_V_W: return Hkv * D * H;
    case SY_T_K_B: case SY_T_V_B: return Hkv * D;
    case SY_T_O_W: return H * Hq * D;
    case SY_T_O_B: return H;
    case SY_T_SINKS: return Hq;
    case SY_T_ATTN_NORM: case SY_T_MLP_NORM: return H;
    case SY_T_ROUTER_W: return E * H;
    case SY_T_ROUTER_B: return E;
    case SY_T_W13_BLOCKS: return E * 2 * I * (H / 32) * 16;
    case SY_T_W13_SCALES: return E * 2 * I * (H / 32);
    case SY_T_W13_BIAS: return E * 2 * I;
    case SY_T_W2_BLOCKS: return E * H * (I / 32) * 16;
    case SY_T_W2_SCALES: return E * H * (I / 32);
    case SY_T_W2_BIAS: return E * H;
    default: return 0;
    }
}

const char *sy_ckpt_name(uint32_t layer, uint32_t kind, char *buf, size_t len)
{
    static const char *const per_layer[SY_T_PER_LAYER_COUNT_] = {
        [SY_T_Q_W] = "self_attn.q_proj.weight",     [SY_T_Q_B] = "self_attn.q_proj.bias",
        [SY_T_K_W] = "self_attn.k_proj.weight",     [SY_T_K_B] = "self_attn.k_proj.bias",
        [SY_T_V_W] = "self_attn.v_proj.weight",     [SY_T_V_B] = "self_attn.v_proj.bias",
        [SY_T_O_W] = "self_attn.o_proj.weight",     [SY_T_O_B] = "self_attn.o_proj.bias",
        [SY_T_SINKS] = "self_attn.sinks",           [SY_T_ATTN_NORM] = "input_layernorm.weight",
        [SY_T_MLP_NORM] = "post_attention_layernorm.weight", [SY_T_ROUTER_W] = "mlp.router.weight",
        [SY_T_ROUTER_B] = "mlp.router.bias",        [SY_T_W13_BLOCKS] = "mlp.experts.gate_up_proj_blocks",
        [SY_T_W13_SCALES] = "mlp.experts.gate_up_proj_scales", [SY_T_W13_BIAS] = "mlp.experts.gate_up_proj_bias",
        [SY_T_W2_BLOCKS] = "mlp.experts.down_proj_blocks", [SY_T_W2_SCALES] = "mlp.experts.down_proj_scales",
        [SY_T_W2_BIAS] = "mlp.experts.down_proj_bias",
    };
    if (layer == SY_GLOBAL_LAYER) {
        snprintf(buf, len, "%s", kind == SY_T_EMBED ? "model.embed_tokens.weight"
                                 : kind == SY_T_FINAL_NORM ? "model.norm.weight"
                                                           : "lm_head.weight");
    } else {
        snprintf(buf, len, "model.layers.%u.%s", layer, kind < SY_T_PER_LAYER_COUNT_ ? per_layer[kind] : "?");
    }
    return buf;
}

sy_status sy_model_dims_check(const sy_model_dims *d, sy_error *err)
{
    if (!d->layers || !d->hidden || !d->q_heads || !d->kv_heads || !d->head_dim || !d->experts || !d->top_k ||
        !d->intermediate || !d->vocab)
        return sy_fail(err, SY_E_INVALID, "model dimensions must all be positive");
    if (d->q_heads % d->kv_heads)
        return sy_fail(err, SY_E_INVALID, "model.q_heads (%u) must be a multiple of model.kv_heads (%u)", d->q_heads,
                       d->kv_heads);
    if (d->hidden % 32 || d->intermediate % 32)
        return sy_fail(err, SY_E_INVALID,
                       "MXFP4 experts need model.hidden (%u) and model.intermediate (%u) to be multiples of 32",
                       d->hidden, d->intermediate);
    if (d->top_k > d->experts)
        return sy_fail(err, SY_E_INVALID, "model.top_k (%u) exceeds model.experts (%u)", d->top_k, d->experts);
    if (d->head_dim % 2)
        return sy_fail(err, SY_E_INVALID, "model.head_dim (%u) must be even for NeoX RoPE", d->head_dim);
    return SY_OK;
}

/* The generator of each checkpoint tensor: one place, shared by host generation and by backends
 * that generate on the device (sy_backend_desc.synth_fill). */
sy_synth_spec sy_synth_spec_for(const sy_model_dims *d, uint64_t seed, uint32_t layer, uint32_t kind)
{
    sy_synth_spec s = {0};
    s.struct_size = sizeof s;
    s.seed = seed;
    s.tensor = sy_tensor_id(layer == SY_GLOBAL_LAYER ? 1023u : layer, kind);
    s.kind = SY_SYNTH_BF16_UNIFORM;
    float in_scale = sqrtf(3.0f / (float)d->hidden);
    if (layer == SY_GLOBAL_LAYER) {
        if (kind == SY_T_EMBED)
            s.scale = 1.0f;
        else if (kind == SY_T_FINAL_NORM)
            s.scale = 0.1f, s.offset = 1.0f;
        else
            s.scale = in_scale;
        return s;
    }
    switch (kind) {
    case SY_T_Q_W: case SY_T_K_W: case SY_T_V_W: case SY_T_ROUTER_W: s.scale = in_scale; break;
    case SY_T_O_W: s.scale = sqrtf(3.0f / (float)(d->q_heads * d->head_dim)); break;
    case SY_T_SINKS: s.scale = 2.0f; break;
    case SY_T_ATTN_NORM: case SY_T_MLP_NORM: s.scale = 0.1f, s.offset = 1.0f; break;
    case SY_T_W13_BLOCKS: case SY_T_W2_BLOCKS: s.kind = SY_SYNTH_BYTES; break;
    case SY_T_W13_SCALES: case SY_T_W2_SCALES: {
        /* e8m0 exponents over six octaves, shifted down by log2(sqrt(K)) - 2 so that a K-long dot
         * product of E2M1 values (mean magnitude ~2.5) stays of order one. */
        uint32_t k = kind == SY_T_W13_SCALES ? d->hidden : d->intermediate;
        int shift = (int)lround(0.5 * log2((double)k)) - 2;
        s.kind = SY_SYNTH_E8M0;
        s.e8m0_base = (uint32_t)(122 - (shift > 0 ? shift : 0));
        s.e8m0_span = 6;
        break;
    }
    default: s.scale = 0.02f; break; /* biases */
    }
    return s;
}

void sy_synth_fill_host(const sy_synth_spec *s, void *dst, uint64_t count)
{
    if (s->kind == SY_SYNTH_BF16_UNIFORM) {
        uint16_t *t = dst;
        for (uint64_t i = 0; i < count; i++)
            t[i] = sy_synth_element(s->kind, s->seed, s->tensor, i, s->scale, s->offset, 0, 0);
    } else {
        uint8_t *t = dst;
        for (uint64_t i = 0; i < count; i++)
            t[i] = (uint8_t)sy_synth_element(s->kind, s->seed, s->tensor, i, 0, 0, s->e8m0_base, s->e8m0_span);
    }
}

static void *synth(const sy_model_dims *d, uint64_t seed, uint32_t layer, uint32_t kind)
{
    sy_synth_spec s = sy_synth_spec_for(d, seed, layer, kind);
    uint64_t n = sy_ckpt_numel(d, layer, kind);
    void *t = sy_xcalloc(n, s.kind == SY_SYNTH_BF16_UNIFORM ? 2 : 1);
    sy_synth_fill_host(&s, t, n);
    return t;
}

void sy_synth_layer(const sy_model_dims *d, uint64_t seed, uint32_t l, sy_host_layer *o)
{
    o->q_w = synth(d, seed, l, SY_T_Q_W);
    o->k_w = synth(d, seed, l, SY_T_K_W);
    o->v_w = synth(d, seed, l, SY_T_V_W);
    o->o_w = synth(d, seed, l, SY_T_O_W);
    o->q_b = synth(d, seed, l, SY_T_Q_B);
    o->k_b = synth(d, seed, l, SY_T_K_B);
    o->v_b = synth(d, seed, l, SY_T_V_B);
    o->o_b = synth(d, seed, l, SY_T_O_B);
    o->sinks = synth(d, seed, l, SY_T_SINKS);
    o->attn_norm = synth(d, seed, l, SY_T_ATTN_NORM);
    o->mlp_norm = synth(d, seed, l, SY_T_MLP_NORM);
    o->router_w = synth(d, seed, l, SY_T_ROUTER_W);
    o->router_b = synth(d, seed, l, SY_T_ROUTER_B);
    o->w13_blocks = synth(d, seed, l, SY_T_W13_BLOCKS);
    o->w13_scales = synth(d, seed, l, SY_T_W13_SCALES);
    o->w13_bias = synth(d, seed, l, SY_T_W13_BIAS);
    o->w2_blocks = synth(d, seed, l, SY_T_W2_BLOCKS);
    o->w2_scales = synth(d, seed, l, SY_T_W2_SCALES);
    o->w2_bias = synth(d, seed, l, SY_T_W2_BIAS);
}

void sy_synth_globals(const sy_model_dims *d, uint64_t seed, sy_host_weights *o)
{
    o->dims = *d;
    o->embed = synth(d, seed, SY_GLOBAL_LAYER, SY_T_EMBED);
    o->final_norm = synth(d, seed, SY_GLOBAL_LAYER, SY_T_FINAL_NORM);
    o->lm_head = synth(d, seed, SY_GLOBAL_LAYER, SY_T_LM_HEAD);
}

void sy_host_layer_free(sy_host_layer *l)
{
    void *all[] = {l->q_w, l->q_b, l->k_w, l->k_b, l->v_w, l->v_b, l->o_w, l->o_b, l->sinks, l->attn_norm,
                   l->mlp_norm, l->router_w, l->router_b, l->w13_blocks, l->w13_scales, l->w13_bias,
                   l->w2_blocks, l->w2_scales, l->w2_bias};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    *l = (sy_host_layer){0};
}

void sy_host_weights_free(sy_host_weights *w)
{
    free(w->embed);
    free(w->final_norm);
    free(w->lm_head);
    if (w->layer) {
        for (uint32_t l = 0; l < w->dims.layers; l++)
            sy_host_layer_free(&w->layer[l]);
        free(w->layer);
    }
    *w = (sy_host_weights){0};
}
