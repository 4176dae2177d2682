/* A plain-C reference of the gpt-oss decoder in double precision: dense causal attention over
 * explicit K/V per sequence, experts dequantized from the checkpoint's MXFP4 blocks. Written from
 * the contracts of docs/plugin-abi.md, independently of the plugins it checks. */
#ifndef SY_REF_FORWARD_H
#define SY_REF_FORWARD_H

#include <stdint.h>

#include "model/model.h"

typedef struct sy_ref_model sy_ref_model;

sy_ref_model *sy_ref_create(const sy_model_dims *d, uint64_t seed);
void sy_ref_destroy(sy_ref_model *m);
/* Logits (vocab doubles per position) for every position of one sequence of n tokens.
 * K and V are read as the KV cache stores them (rounded to kv_dtype: bf16, or f32 = exact), except
 * that queries of the first prefill chunk (positions < fresh_len) see that chunk's keys as computed:
 * the engine's first chunk attends to its fresh K/V, every later read goes through the pool. */
void sy_ref_logits(const sy_ref_model *m, const uint32_t *tokens, uint32_t n, uint32_t fresh_len, int32_t kv_dtype,
                   double *logits);

/* K/V of positions 0 .. len - 1 given instead of computed (a synthetic context): value(user, layer,
 * is_v, position, h * head_dim + d), as the pool holds them (after RoPE). */
typedef struct sy_ref_context {
    uint32_t len;
    double (*value)(void *user, uint32_t layer, int is_v, uint32_t pos, uint32_t c);
    void *user;
} sy_ref_context;

/* As sy_ref_logits for n tokens at positions ctx->len .. ctx->len + n - 1 that follow the given
 * context (ctx NULL: none); logits of every one of them. */
void sy_ref_logits_after(const sy_ref_model *m, const sy_ref_context *ctx, const uint32_t *tokens, uint32_t n,
                         uint32_t fresh_len, int32_t kv_dtype, double *logits);

#endif
