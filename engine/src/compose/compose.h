/* Composition: for the configured backend, one plugin per slot (kv_layout, attention, rope, norm,
 * moe, linear), chosen by intersecting the resolved config with each plugin's capability record.
 * A capability a plugin does not declare is a refusal. `auto` takes the compatible plugin of
 * highest rank, then name; an explicit name (attention.plugin: attn_paged) that cannot serve the
 * config is an error, never a fallback. Every candidate keeps the reason it was rejected.
 *
 * The rules of docs/architecture.md ("Capabilities and composition") are checked here:
 *   1 vectorized_5d: X = vector_bytes / element size; page_size and head_dim multiples of X;
 *     an unset kv_cache.page_size becomes the kv_layout plugin's default_page_size.
 *   2 fp8 KV needs attention with SY_ATTN_FP8_SCALES and kv_cache.k_scale / v_scale.
 *   3 attention reads the layout natively; the fused rope + KV write only where the rope plugin
 *     writes that layout (rope.fuse_kv_write on / auto / off).
 *   4 fused add + RMSNorm + pad: norm pad_to_multiple, MoE accepts padded input, tp == 1
 *     (norm.fuse_pad on / auto / off).
 *   5 every declared max_tp bounds parallel.tp.
 *   6 one linear for q, k and v (their rows' slices read downstream): attention with
 *     SY_ATTN_ROW_STRIDE, kv_layout with SY_KV_FEAT_ANY_TOKEN_STRIDE (linear.fuse_qkv on / auto / off).
 *   7 a later prefill chunk reads its prefix from the pool's pages: attention with
 *     SY_ATTN_PREFILL_PAGED (attention.prefill_paged on / auto / off; else gather + prefill_linear).
 * Nothing here runs plugin code except kv_layout ops.geometry, which the ABI makes callable
 * before init for exactly this purpose. */
#ifndef SY_COMPOSE_H
#define SY_COMPOSE_H

#include <stdio.h>

#include "config/config.h"
#include "switchyard/switchyard.h"

typedef struct sy_composition sy_composition;

/* A plugin of the slot's kind for the chosen backend, as the composition saw it. */
typedef struct sy_compose_candidate {
    const sy_registry_entry *entry;
    const char *reason; /* why it cannot serve this config; NULL when it can */
    const char *key;    /* the config key the reason is about (NULL when compatible) */
} sy_compose_candidate;

/* What the engine needs beyond the plugin choice. Valid when sy_composition_ok. */
typedef struct sy_compose_decisions {
    uint32_t layout;         /* sy_kv_layout_id of kv_cache.layout */
    int32_t kv_dtype;        /* sy_dtype of the pool (bf16, fp8_e4m3) */
    int32_t act_dtype;       /* sy_dtype of activations (model.dtype) */
    uint32_t page_size;      /* resolved kv_cache.page_size (also written back into the config) */
    uint32_t kv_vec;         /* X: elements per vector of the layout (1 when it has none) */
    float k_scale, v_scale;  /* fp8 dequantization scales; 1 for unit and for bf16 pools */
    int fused_rope_kv;       /* 1: rope.rope_kv_write; 0: rope.rope, then kv_layout.write */
    const char *fused_rope_kv_why;
    uint32_t pad_multiple;   /* > 0: fused add + RMSNorm + pad to this multiple (the MoE's input alignment) */
    uint32_t padded_hidden;  /* model.hidden rounded up to pad_multiple; model.hidden when not fused */
    const char *fuse_pad_why;
    int fused_qkv;           /* 1: one linear for q, k and v, its rows' slices read by rope, KV write, attention */
    uint32_t qkv_linears;    /* linear calls a layer makes for q, k and v: 1 (fused, or one linear writing
                                three arrays through the linear plugin's split_y), else 3 */
    const char *fused_qkv_why;
    int prefill_paged;       /* 1: a later prefill chunk runs attention.prefill_paged over the pool */
    const char *prefill_paged_why;
} sy_compose_decisions;

/* Composes; every problem goes to *diags at the key that caused it. Writes derived defaults back
 * into cfg (kv_cache.page_size). Never returns NULL; check sy_composition_ok. */
sy_composition *sy_compose(const sy_registry *reg, sy_config *cfg, sy_diags *diags);
void sy_composition_free(sy_composition *c);
/* 1 when a backend and every slot have a plugin and no rule failed. */
int sy_composition_ok(const sy_composition *c);

/* The backend entry used (NULL when none could be chosen) and why. */
const sy_registry_entry *sy_composition_backend(const sy_composition *c);
const char *sy_composition_backend_why(const sy_composition *c);
/* The chosen plugin of a slot (kind = sy_kind), NULL when none fits; why it was chosen. */
const sy_registry_entry *sy_composition_plugin(const sy_composition *c, int32_t kind);
const char *sy_composition_why(const sy_composition *c, int32_t kind);
/* Every candidate of a slot in the order considered (rank desc, then name), the chosen one included. */
size_t sy_composition_candidate_count(const sy_composition *c, int32_t kind);
const sy_compose_candidate *sy_composition_candidate(const sy_composition *c, int32_t kind, size_t i);
const sy_compose_decisions *sy_composition_decisions(const sy_composition *c);

/* The slots in the order they are listed (kv_layout, attention, rope, norm, moe, linear). */
#define SY_COMPOSE_SLOTS 6
int32_t sy_compose_slot_kind(size_t i);
/* The config key that names a slot's plugin ("attention.plugin", "kv_cache.plugin", ...). */
const char *sy_compose_slot_key(int32_t kind);

/* `switchyard config explain`: every key with value and source, the backend, each slot's plugin
 * with why and every other candidate with its reason, and the decisions. */
void sy_composition_explain(const sy_composition *c, const sy_config *cfg, FILE *f);

/* Opens the registry on extra_paths (--plugin-path), then the config's plugin_path, then the
 * usual places (sy_registry_open). */
sy_status sy_compose_open_registry(const sy_config *cfg, const char *const *extra_paths, size_t n_extra,
                                   int allow_insecure, sy_registry **reg, sy_error *err);

#endif
