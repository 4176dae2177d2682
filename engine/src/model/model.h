/* The gpt-oss decoder as the engine builds it: dimensions, tensor ids of the checkpoint, and the
 * weights held on the backend. */
#ifndef SY_MODEL_H
#define SY_MODEL_H

#include <stdint.h>

#include "switchyard/switchyard.h"

typedef struct sy_model_dims {
    uint32_t layers;
    uint32_t hidden;          /* H */
    uint32_t q_heads;
    uint32_t kv_heads;
    uint32_t head_dim;        /* D */
    uint32_t experts;         /* E */
    uint32_t top_k;
    uint32_t intermediate;    /* I */
    uint32_t vocab;
    uint32_t sliding_window;  /* W keys (the current one included) on sliding layers; 0 = none */
    uint32_t swa_even_layers; /* 1: layers 0, 2, 4, ... use the window (gpt-oss) */
    uint32_t has_sinks;
    float rope_theta;
    float yarn_factor;        /* 1 = no YaRN */
    float yarn_beta_fast;
    float yarn_beta_slow;
    uint32_t yarn_original_max_position;
    float rms_eps;
    float swiglu_alpha;
    float swiglu_limit;
    float attn_scale;         /* 0 = 1/sqrt(head_dim) */
} sy_model_dims;

static inline int sy_layer_is_sliding(const sy_model_dims *m, uint32_t layer)
{
    return m->sliding_window > 0 && (!m->swa_even_layers || layer % 2 == 0);
}

/* Checkpoint tensors, in HF gpt-oss naming (model.layers.N.*). Ids feed the synthetic generator
 * and name tensors in messages; never renumber (it would change every synthetic model). */
typedef enum sy_tensor_kind {
    SY_T_Q_W = 0, SY_T_Q_B, SY_T_K_W, SY_T_K_B, SY_T_V_W, SY_T_V_B, SY_T_O_W, SY_T_O_B,
    SY_T_SINKS, SY_T_ATTN_NORM, SY_T_MLP_NORM, SY_T_ROUTER_W, SY_T_ROUTER_B,
    SY_T_W13_BLOCKS, SY_T_W13_SCALES, SY_T_W13_BIAS, SY_T_W2_BLOCKS, SY_T_W2_SCALES, SY_T_W2_BIAS,
    SY_T_PER_LAYER_COUNT_,
    SY_T_EMBED = 0, SY_T_FINAL_NORM = 1, SY_T_LM_HEAD = 2
} sy_tensor_kind;

#define SY_GLOBAL_LAYER 0xFFFFu

static inline uint32_t sy_tensor_id(uint32_t layer, uint32_t kind)
{
    return layer * 64u + kind;
}

/* Synthetic checkpoint in host memory, in the HF layout and dtypes: bf16 for dense tensors, MXFP4
 * blocks and e8m0 scales for the experts. Generation is a pure function of (seed, tensor, index). */
typedef struct sy_host_layer {
    uint16_t *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b; /* bf16 */
    uint16_t *sinks, *attn_norm, *mlp_norm, *router_w, *router_b;
    uint8_t *w13_blocks, *w13_scales, *w2_blocks, *w2_scales;
    uint16_t *w13_bias, *w2_bias;
} sy_host_layer;

typedef struct sy_host_weights {
    sy_model_dims dims;
    uint16_t *embed, *final_norm, *lm_head;
    sy_host_layer *layer;
} sy_host_weights;

/* Generate one layer's tensors (allocating them) or the global ones, from the seed. Layers are made
 * one at a time so a large model never needs its whole checkpoint in host memory. */
void sy_synth_layer(const sy_model_dims *d, uint64_t seed, uint32_t layer, sy_host_layer *out);
void sy_synth_globals(const sy_model_dims *d, uint64_t seed, sy_host_weights *out);
void sy_host_layer_free(sy_host_layer *l);
void sy_host_weights_free(sy_host_weights *w); /* globals and any layers held */

/* How a checkpoint tensor is generated (kind, scale, offset, e8m0 range): the one definition, used
 * by host generation and by backends' synth_fill. */
sy_synth_spec sy_synth_spec_for(const sy_model_dims *d, uint64_t seed, uint32_t layer, uint32_t kind);
void sy_synth_fill_host(const sy_synth_spec *spec, void *dst, uint64_t count);

/* Element count of a per-layer tensor kind, or of a global one with layer == SY_GLOBAL_LAYER. */
uint64_t sy_ckpt_numel(const sy_model_dims *d, uint32_t layer, uint32_t kind);
/* HF name of a tensor: "model.layers.3.self_attn.q_proj.weight", "model.embed_tokens.weight". */
const char *sy_ckpt_name(uint32_t layer, uint32_t kind, char *buf, size_t len);
/* Validates dimensions (multiples of 32 for MXFP4 blocks, heads dividing, ...). */
sy_status sy_model_dims_check(const sy_model_dims *d, sy_error *err);

#endif
