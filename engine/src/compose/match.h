/* What the composition asks of each kind of plugin: the config values the capability checks read,
 * and one check per kind. Internal to engine/src/compose. */
#ifndef SY_COMPOSE_MATCH_H
#define SY_COMPOSE_MATCH_H

#include <stdint.h>

#include "config/config.h"
#include "switchyard/switchyard.h"
#include "util/strbuf.h"

typedef struct sy_compose_need {
    const sy_config *cfg;
    uint32_t layout;          /* sy_kv_layout_id */
    int32_t kv_dtype, act_dtype;
    uint32_t page_size;       /* 0 while unset: each kv_layout candidate offers its default */
    uint32_t head_dim, q_heads, kv_heads, hidden, experts, top_k;
    uint32_t tp, window, num_splits;
    int sinks, yarn;
    uint32_t weight_format;   /* sy_moe_weight_format */
    uint32_t gate_up_layout;  /* sy_moe_gate_up_layout */
    int fuse_kv_on;           /* rope.fuse_kv_write == on */
    int fuse_pad_on;          /* norm.fuse_pad == on */
    int fuse_qkv_on;          /* linear.fuse_qkv == on */
    int prefill_paged_on;     /* attention.prefill_paged == on */
    const sy_moe_caps *moe;   /* the chosen MoE's caps (norm's pad check needs its alignment), or NULL */
} sy_compose_need;

/* Returns 1 when the plugin can serve `need`; otherwise 0, the reason appended to *why and the key
 * it is about in *key. */
typedef int (*sy_compose_match_fn)(const sy_compose_need *need, const sy_plugin_desc *d, sy_str *why,
                                   const char **key);

/* The check of a kind (sy_kind), or NULL. */
sy_compose_match_fn sy_compose_matcher(int32_t kind);

/* The page size a kv_layout plugin would use for `need`: the configured one, or its default. */
uint32_t sy_compose_kv_page_size(const sy_compose_need *need, const sy_kv_layout_caps *caps);
/* X of a layout plugin for a store dtype (vector_bytes / element size; 1 without vectors). */
uint32_t sy_compose_kv_vec(const sy_kv_layout_caps *caps, int32_t store_dtype);
/* Fused rope + KV write of this rope plugin for the layout and dtype: 1 supported, else 0 with why. */
int sy_compose_rope_fuses(const sy_compose_need *need, const sy_rope_caps *caps, sy_str *why);

#endif
