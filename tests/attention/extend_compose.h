/* Extend with a cached prefix, composed the two ways the engine composes it (docs/plugin-abi.md,
 * attention): the pool already holds every token of each sequence (prefix and new chunk); either
 * kv_layout.gather reads them back to linear K/V in the store dtype and attention.prefill_linear
 * runs the new queries against them, or attention.prefill_paged runs them against the pool's pages
 * (query i of a sequence at position Lk - Lq + i either way). Every call goes through the engine's
 * call-boundary checks first. */
#ifndef SY_TEST_EXTEND_COMPOSE_H
#define SY_TEST_EXTEND_COMPOSE_H

#include <stdint.h>

#include "switchyard/plugin.h"

typedef struct extend_request {
    const sy_plugin_desc *kv_plugin;
    const sy_plugin_desc *attn_plugin;
    void *attn_ctx;
    const sy_kv_geometry *geom;
    const void *k_cache;
    const void *v_cache;
    float k_scale, v_scale;
    uint32_t B;
    const int32_t *cu_k;   /* [B + 1]: sequence b's keys are slots[cu_k[b] .. cu_k[b+1]) */
    const int32_t *slots;  /* pool slot of every key, prefix first */
    const int32_t *cu_q;   /* [B + 1]: rows of q / out per sequence, Lq <= Lk */
    sy_tensor q;           /* [cu_q[B], Hq, D] */
    sy_tensor out;         /* like q */
    const float *sinks;    /* [Hq] or NULL */
    float scale;
    int32_t window;
    /* prefill_paged instead of gather + prefill_linear: sequence b's pages are row b of
     * block_tables [B][max_blocks], its keys positions 0 .. cu_k[b+1] - cu_k[b] - 1 */
    int paged;
    const int32_t *block_tables;
    uint32_t max_blocks;
} extend_request;

sy_status extend_with_prefix(const extend_request *r, sy_error *err);

#endif
