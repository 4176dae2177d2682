/* Plugins of every kind that do nothing, with capabilities that accept any configuration: the
 * engine run over them costs only the engine's own work between plugin calls, which is what the
 * overhead benchmark measures. Never installed; not for real use. */
#include <string.h>

#include "switchyard/plugin.h"

static sy_status noop_geometry(sy_kv_geometry *g, sy_error *err)
{
    (void)err;
    g->vec = 1;
    g->k_elems = g->v_elems = 1; /* no pool memory: nothing is stored */
    return SY_OK;
}

#define NOOP(name, args_t)                                                        \
    static sy_status name(void *ctx, sy_stream s, const args_t *a, sy_error *err) \
    {                                                                             \
        (void)ctx;                                                                \
        (void)s;                                                                  \
        (void)a;                                                                  \
        (void)err;                                                                \
        return SY_OK;                                                             \
    }
NOOP(noop_write, sy_kv_write_args)
NOOP(noop_gather, sy_kv_gather_args)
NOOP(noop_decode, sy_attn_decode_args)
NOOP(noop_prefill, sy_attn_prefill_args)
NOOP(noop_prepare, sy_moe_prepare_args)
NOOP(noop_route_ids, sy_moe_route_args)
NOOP(noop_forward, sy_moe_forward_args)
NOOP(noop_norm, sy_norm_args)
NOOP(noop_rope, sy_rope_args)
NOOP(noop_rope_kv, sy_rope_kv_write_args)
NOOP(noop_linear, sy_linear_args)

static sy_status noop_prepared_bytes(const sy_moe_shape *s, uint64_t *bytes, sy_error *err)
{
    (void)s;
    (void)err;
    *bytes = 1;
    return SY_OK;
}

#define ALL_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3))

static const sy_kv_layout_caps kv_caps = {sizeof kv_caps, SY_LAYOUT_NHD, ALL_DTYPES, ALL_DTYPES, 0, 16, 1u << 20, 4096,
                                          SY_KV_FEAT_SLOT_MAP | SY_KV_FEAT_FP8_SCALES | SY_KV_FEAT_ANY_TOKEN_STRIDE};
static const sy_kv_layout_ops kv_ops = {sizeof kv_ops, 0, noop_geometry, noop_write, noop_gather};
static const sy_attention_caps attn_caps = {
    sizeof attn_caps, 0x3F, 2, {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D}, ALL_DTYPES, ALL_DTYPES, 1, 4096, 1, 1,
    1u << 20, 1, 1024, 1024};
static const sy_attention_ops attn_ops = {sizeof attn_ops, 0, noop_decode, noop_prefill, NULL};
static const sy_moe_caps moe_caps = {sizeof moe_caps, SY_MOE_WEIGHTS_MXFP4, SY_MOE_GATE_UP_INTERLEAVE, 256, 1, 1024,
                                     4096, 64, ALL_DTYPES};
static const sy_moe_ops moe_ops = {sizeof moe_ops, 0, noop_prepared_bytes, noop_prepare, noop_route_ids, noop_forward};
static const sy_norm_caps norm_caps = {sizeof norm_caps, 7, ALL_DTYPES, 4096};
static const sy_norm_ops norm_ops = {sizeof norm_ops, 0, noop_norm};
static const sy_rope_caps rope_caps = {sizeof rope_caps, SY_ROPE_STYLE_NEOX, 3, 4096, 2,
                                       {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D}, ALL_DTYPES, ALL_DTYPES};
static const sy_rope_ops rope_ops = {sizeof rope_ops, 0, noop_rope, noop_rope_kv};
static const sy_linear_caps linear_caps = {sizeof linear_caps, ALL_DTYPES, ALL_DTYPES, 1, SY_LINEAR_SPLIT_Y};
static const sy_linear_ops linear_ops = {sizeof linear_ops, 0, noop_linear};

#define DESC(var, k, c, o) \
    static const sy_plugin_desc var = {SY_ABI_MAJOR, SY_ABI_MINOR, sizeof(sy_plugin_desc), k, "noop", "cpu", \
                                       "0", "does nothing (overhead benchmark)", -100, 0, &c, &o, NULL, NULL}
DESC(d_kv, SY_KIND_KV_LAYOUT, kv_caps, kv_ops);
DESC(d_attn, SY_KIND_ATTENTION, attn_caps, attn_ops);
DESC(d_moe, SY_KIND_MOE, moe_caps, moe_ops);
DESC(d_norm, SY_KIND_NORM, norm_caps, norm_ops);
DESC(d_rope, SY_KIND_ROPE, rope_caps, rope_ops);
DESC(d_linear, SY_KIND_LINEAR, linear_caps, linear_ops);

static const sy_plugin_desc *const all[] = {&d_kv, &d_attn, &d_moe, &d_norm, &d_rope, &d_linear, NULL};

SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t major, uint32_t minor);
SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t major, uint32_t minor)
{
    (void)minor;
    return major == SY_ABI_MAJOR ? all : NULL;
}
