/* One capability check per kind. Each failure names the plugin's declaration, the config value and
 * its key, e.g. "reads nhd only, not kv_cache.layout vectorized_5d". A zero in a caps record means
 * "not supported": a plugin with head_dim_max 0 serves no head dim at all. */
#include <stdio.h>
#include <string.h>

#include "compose/match.h"

static int refuse(sy_str *why, const char **key, const char *which, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(sy_str *why, const char **key, const char *which, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(why, fmt, ap);
    va_end(ap);
    *key = which;
    return 0;
}

static int has_dtype(uint32_t mask, int32_t dt)
{
    return (mask & SY_DTYPE_BIT(dt)) != 0;
}

static void dtype_list(sy_str *s, uint32_t mask)
{
    int first = 1;
    for (int32_t dt = 1; dt < SY_DTYPE_COUNT_; dt++)
        if (has_dtype(mask, dt)) {
            sy_str_appendf(s, "%s%s", first ? "" : ", ", sy_dtype_name(dt));
            first = 0;
        }
    if (first)
        sy_str_appendf(s, "none");
}

static void layout_list(sy_str *s, const uint32_t *layouts, uint32_t n)
{
    for (uint32_t i = 0; i < n && i < SY_MAX_CAPS_LAYOUTS; i++)
        sy_str_appendf(s, "%s%s", i ? ", " : "", sy_layout_name(layouts[i]));
    if (!n)
        sy_str_appendf(s, "none");
}

static int has_layout(const uint32_t *layouts, uint32_t n, uint32_t layout)
{
    for (uint32_t i = 0; i < n && i < SY_MAX_CAPS_LAYOUTS; i++)
        if (layouts[i] == layout)
            return 1;
    return 0;
}

static int dtype_refused(sy_str *why, const char **key, const char *which, const char *what, uint32_t mask, int32_t dt)
{
    sy_str_appendf(why, "%s ", what);
    dtype_list(why, mask);
    return refuse(why, key, which, ", not %s %s", which, sy_dtype_name(dt));
}

/* lo..hi with an optional multiple; 0 for hi (or lo > hi) declares nothing. */
static int in_range(uint32_t v, uint32_t lo, uint32_t hi, uint32_t multiple)
{
    return hi != 0 && v >= lo && v <= hi && (multiple <= 1 || v % multiple == 0);
}

static int range_refused(sy_str *why, const char **key, const char *which, const char *what, uint32_t v, uint32_t lo,
                         uint32_t hi, uint32_t multiple)
{
    if (hi == 0 || lo > hi)
        return refuse(why, key, which, "declares no %s (so none, not %s %u)", what, which, v);
    sy_str_appendf(why, "takes %s %u..%u", what, lo, hi);
    if (multiple > 1)
        sy_str_appendf(why, " in multiples of %u", multiple);
    return refuse(why, key, which, ", not %s %u", which, v);
}

uint32_t sy_compose_kv_vec(const sy_kv_layout_caps *caps, int32_t store_dtype)
{
    size_t size = sy_dtype_size(store_dtype);
    return caps->vector_bytes && size ? (uint32_t)(caps->vector_bytes / size) : 1;
}

uint32_t sy_compose_kv_page_size(const sy_compose_need *need, const sy_kv_layout_caps *caps)
{
    return need->page_size ? need->page_size : caps->default_page_size;
}

static int match_kv_layout(const sy_compose_need *n, const sy_plugin_desc *d, sy_str *why, const char **key)
{
    const sy_kv_layout_caps *c = d->caps;
    if (c->layout != n->layout)
        return refuse(why, key, "kv_cache.layout", "is layout %s, not kv_cache.layout %s", sy_layout_name(c->layout),
                      sy_layout_name(n->layout));
    if (!has_dtype(c->store_dtypes, n->kv_dtype))
        return dtype_refused(why, key, "kv_cache.dtype", "stores", c->store_dtypes, n->kv_dtype);
    if (!has_dtype(c->src_dtypes, n->act_dtype))
        return dtype_refused(why, key, "model.dtype", "writes K/V from", c->src_dtypes, n->act_dtype);
    if (n->kv_dtype == SY_DTYPE_FP8_E4M3 && !(c->features & SY_KV_FEAT_FP8_SCALES))
        return refuse(why, key, "kv_cache.dtype", "declares no fp8 scales, needed by kv_cache.dtype fp8_e4m3");
    if (n->window && !(c->features & SY_KV_FEAT_SLOT_MAP))
        return refuse(why, key, "model.sliding_window",
                      "declares no slot map, needed by the sliding-window pool (model.sliding_window %u)", n->window);
    uint32_t page = sy_compose_kv_page_size(n, c);
    if (!page)
        return refuse(why, key, "kv_cache.page_size", "declares no default page size: set kv_cache.page_size");
    /* Rule 1: vectorized layouts address 16-byte vectors of X elements along page and head dim. */
    uint32_t x = sy_compose_kv_vec(c, n->kv_dtype);
    const char *page_src = n->page_size ? "kv_cache.page_size" : "its default page size";
    if (x > 1 && page % x)
        return refuse(why, key, "kv_cache.page_size",
                      "needs %s to be a multiple of X = %u (%u bytes / %zu-byte %s), not %u", page_src, x,
                      c->vector_bytes, sy_dtype_size(n->kv_dtype), sy_dtype_name(n->kv_dtype), page);
    if (x > 1 && n->head_dim % x)
        return refuse(why, key, "model.head_dim",
                      "needs model.head_dim to be a multiple of X = %u (%u bytes / %zu-byte %s), not %u", x,
                      c->vector_bytes, sy_dtype_size(n->kv_dtype), sy_dtype_name(n->kv_dtype), n->head_dim);
    if (page > c->max_page_size)
        return refuse(why, key, "kv_cache.page_size", "takes pages of at most %u tokens, not %s %u", c->max_page_size,
                      page_src, page);
    if (n->head_dim > c->max_head_dim)
        return refuse(why, key, "model.head_dim", "takes head dims of at most %u, not model.head_dim %u",
                      c->max_head_dim, n->head_dim);
    /* Rule 6 (kv_layout half). */
    if (n->fuse_qkv_on && !(c->features & SY_KV_FEAT_ANY_TOKEN_STRIDE))
        return refuse(why, key, "linear.fuse_qkv",
                      "declares no any_token_stride (K/V rows as slices of wider rows), needed by linear.fuse_qkv on");
    /* The plugin's own word on the geometry (pure, callable before init). */
    const sy_kv_layout_ops *ops = d->ops;
    sy_kv_geometry g = {0};
    sy_error err = {{0}};
    g.struct_size = sizeof g;
    g.layout = n->layout;
    g.store_dtype = n->kv_dtype;
    g.num_pages = 2;
    g.page_size = page;
    g.kv_heads = n->kv_heads;
    g.head_dim = n->head_dim;
    if (ops->geometry(&g, &err) != SY_OK)
        return refuse(why, key, n->page_size ? "kv_cache.page_size" : "kv_cache.layout", "refuses the geometry: %s",
                      err.msg[0] ? err.msg : "no reason given");
    return 1;
}

static int match_attention(const sy_compose_need *n, const sy_plugin_desc *d, sy_str *why, const char **key)
{
    const sy_attention_caps *c = d->caps;
    const uint32_t needed = SY_ATTN_DECODE_PAGED | SY_ATTN_PREFILL_LINEAR;
    if ((c->features & needed) != needed)
        return refuse(why, key, "attention.plugin", "lacks %s (the engine needs decode_paged and prefill_linear)",
                      (c->features & SY_ATTN_DECODE_PAGED) ? "prefill_linear" : "decode_paged");
    /* Rule 3. */
    if (!has_layout(c->layouts, c->n_layouts, n->layout)) {
        sy_str_appendf(why, "reads ");
        layout_list(why, c->layouts, c->n_layouts);
        return refuse(why, key, "kv_cache.layout", " only, not kv_cache.layout %s", sy_layout_name(n->layout));
    }
    if (!has_dtype(c->kv_dtypes, n->kv_dtype))
        return dtype_refused(why, key, "kv_cache.dtype", "reads KV of", c->kv_dtypes, n->kv_dtype);
    /* Rule 2 (attention half): fp8 without dequant scales reads garbage. */
    if (n->kv_dtype == SY_DTYPE_FP8_E4M3 && !(c->features & SY_ATTN_FP8_SCALES))
        return refuse(why, key, "kv_cache.dtype", "declares no fp8_scales, needed by kv_cache.dtype fp8_e4m3");
    if (!has_dtype(c->q_dtypes, n->act_dtype))
        return dtype_refused(why, key, "model.dtype", "takes queries of", c->q_dtypes, n->act_dtype);
    if (!in_range(n->head_dim, c->head_dim_min, c->head_dim_max, c->head_dim_multiple))
        return range_refused(why, key, "model.head_dim", "head dims", n->head_dim, c->head_dim_min, c->head_dim_max,
                             c->head_dim_multiple);
    if (n->page_size && !in_range(n->page_size, c->page_size_min, c->page_size_max, c->page_size_multiple))
        return range_refused(why, key, "kv_cache.page_size", "page sizes", n->page_size, c->page_size_min,
                             c->page_size_max, c->page_size_multiple);
    if (n->window && !(c->features & SY_ATTN_SLIDING_WINDOW))
        return refuse(why, key, "model.sliding_window", "declares no sliding_window, needed by model.sliding_window %u",
                      n->window);
    if (n->sinks && !(c->features & SY_ATTN_SINKS))
        return refuse(why, key, "model.sinks", "declares no sinks, needed by model.sinks true");
    uint32_t ratio = n->q_heads / n->kv_heads;
    if (ratio > c->max_gqa_ratio)
        return refuse(why, key, "model.q_heads",
                      "takes at most %u query heads per KV head, not %u (model.q_heads %u / model.kv_heads %u)",
                      c->max_gqa_ratio, ratio, n->q_heads, n->kv_heads);
    if (n->num_splits > 1 && !(c->features & SY_ATTN_SPLIT_K))
        return refuse(why, key, "attention.num_splits", "declares no split_k, needed by attention.num_splits %u",
                      n->num_splits);
    /* Rule 6 (attention half). */
    if (n->fuse_qkv_on && !(c->features & SY_ATTN_ROW_STRIDE))
        return refuse(why, key, "linear.fuse_qkv", "declares no row_stride, needed by linear.fuse_qkv on");
    if (n->prefill_paged_on && !(c->features & SY_ATTN_PREFILL_PAGED))
        return refuse(why, key, "attention.prefill_paged",
                      "declares no prefill_paged, needed by attention.prefill_paged on");
    /* Rule 5. */
    if (n->tp > c->max_tp)
        return refuse(why, key, "parallel.tp", "is correct up to max_tp %u, not parallel.tp %u", c->max_tp, n->tp);
    return 1;
}

static const char *gate_up_name(uint32_t v)
{
    return v == SY_MOE_GATE_UP_INTERLEAVE ? "interleave" : v == SY_MOE_GATE_UP_SEPARATED ? "separated" : "none";
}

static const char *weight_format_name(uint32_t v)
{
    return v == SY_MOE_WEIGHTS_MXFP4 ? "mxfp4" : v == SY_MOE_WEIGHTS_BF16 ? "bf16" : "none";
}

static int match_moe(const sy_compose_need *n, const sy_plugin_desc *d, sy_str *why, const char **key)
{
    const sy_moe_caps *c = d->caps;
    if (c->weight_format != n->weight_format)
        return refuse(why, key, "moe.weight_format", "takes %s experts, not moe.weight_format %s",
                      weight_format_name(c->weight_format), weight_format_name(n->weight_format));
    /* A layout meeting the wrong kernel fails silently (GSM8K 0.88 -> 0.21): never mix them. */
    if (c->gate_up_layout != n->gate_up_layout)
        return refuse(why, key, "moe.gate_up_layout", "uses gate/up layout %s, not moe.gate_up_layout %s",
                      gate_up_name(c->gate_up_layout), gate_up_name(n->gate_up_layout));
    if (!has_dtype(c->act_dtypes, n->act_dtype))
        return dtype_refused(why, key, "model.dtype", "takes activations of", c->act_dtypes, n->act_dtype);
    if (n->experts > c->max_experts)
        return refuse(why, key, "model.experts", "takes at most %u experts, not model.experts %u", c->max_experts,
                      n->experts);
    if (n->top_k > c->max_top_k)
        return refuse(why, key, "model.top_k", "routes to at most %u experts, not model.top_k %u", c->max_top_k,
                      n->top_k);
    if (n->fuse_pad_on && !c->accepts_padded_input)
        return refuse(why, key, "norm.fuse_pad", "does not accept padded input, needed by norm.fuse_pad on");
    if (n->fuse_pad_on && c->input_alignment <= 1)
        return refuse(why, key, "norm.fuse_pad", "declares no input alignment to pad to, needed by norm.fuse_pad on");
    /* Rule 5 (seed: the SEPARATED fp4 kernel is wrong at TP >= 2). */
    if (n->tp > c->max_tp)
        return refuse(why, key, "parallel.tp", "is correct up to max_tp %u, not parallel.tp %u", c->max_tp, n->tp);
    return 1;
}

static int match_norm(const sy_compose_need *n, const sy_plugin_desc *d, sy_str *why, const char **key)
{
    const sy_norm_caps *c = d->caps;
    const uint32_t needed = SY_NORM_RMSNORM | SY_NORM_FUSED_ADD;
    if ((c->features & needed) != needed)
        return refuse(why, key, "norm.plugin", "lacks %s (the engine needs rmsnorm and fused_add)",
                      (c->features & SY_NORM_RMSNORM) ? "fused_add" : "rmsnorm");
    if (!has_dtype(c->dtypes, n->act_dtype))
        return dtype_refused(why, key, "model.dtype", "normalizes", c->dtypes, n->act_dtype);
    /* The residual stream (and the embeddings layer 0 normalizes) stays f32 under any model.dtype. */
    if (!has_dtype(c->dtypes, SY_DTYPE_F32)) {
        sy_str_appendf(why, "normalizes ");
        dtype_list(why, c->dtypes);
        return refuse(why, key, "model.dtype", " only, and the residual stream is f32 under any model.dtype");
    }
    /* Rule 4 (norm half). */
    if (n->fuse_pad_on && !(c->features & SY_NORM_PAD_TO_MULTIPLE))
        return refuse(why, key, "norm.fuse_pad", "declares no pad_to_multiple, needed by norm.fuse_pad on");
    if (n->fuse_pad_on && n->moe && n->moe->input_alignment > c->max_pad_multiple)
        return refuse(why, key, "norm.fuse_pad", "pads to multiples of at most %u, not the MoE's input alignment %u",
                      c->max_pad_multiple, n->moe->input_alignment);
    return 1;
}

int sy_compose_rope_fuses(const sy_compose_need *n, const sy_rope_caps *c, sy_str *why)
{
    if (!has_layout(c->fused_kv_layouts, c->n_fused_kv_layouts, n->layout)) {
        if (c->n_fused_kv_layouts == 0) {
            sy_str_appendf(why, "has no fused rope + KV write");
            return 0;
        }
        sy_str_appendf(why, "fuses the KV write for ");
        layout_list(why, c->fused_kv_layouts, c->n_fused_kv_layouts);
        sy_str_appendf(why, " only, not kv_cache.layout %s", sy_layout_name(n->layout));
        return 0;
    }
    if (!has_dtype(c->fused_kv_dtypes, n->kv_dtype)) {
        sy_str_appendf(why, "fuses the KV write for ");
        dtype_list(why, c->fused_kv_dtypes);
        sy_str_appendf(why, " only, not kv_cache.dtype %s", sy_dtype_name(n->kv_dtype));
        return 0;
    }
    return 1;
}

static int match_rope(const sy_compose_need *n, const sy_plugin_desc *d, sy_str *why, const char **key)
{
    const sy_rope_caps *c = d->caps;
    if (!(c->styles & SY_ROPE_STYLE_NEOX))
        return refuse(why, key, "rope.plugin", "lacks the NeoX (half-split) style gpt-oss uses");
    if (n->yarn && !(c->scalings & SY_ROPE_SCALING_YARN))
        return refuse(why, key, "model.yarn_factor", "lacks YaRN scaling, needed by model.yarn_factor > 1");
    if (!n->yarn && !(c->scalings & SY_ROPE_SCALING_NONE))
        return refuse(why, key, "model.yarn_factor", "lacks unscaled RoPE, needed by model.yarn_factor 1");
    if (n->head_dim > c->head_dim_max)
        return refuse(why, key, "model.head_dim", "rotates head dims of at most %u, not model.head_dim %u",
                      c->head_dim_max, n->head_dim);
    if (!has_dtype(c->dtypes, n->act_dtype))
        return dtype_refused(why, key, "model.dtype", "rotates", c->dtypes, n->act_dtype);
    /* Rule 3 (rope half): "on" makes the fused write a requirement. */
    if (n->fuse_kv_on && !sy_compose_rope_fuses(n, c, why)) {
        *key = "rope.fuse_kv_write";
        sy_str_appendf(why, ", needed by rope.fuse_kv_write on");
        return 0;
    }
    return 1;
}

static int match_linear(const sy_compose_need *n, const sy_plugin_desc *d, sy_str *why, const char **key)
{
    const sy_linear_caps *c = d->caps;
    /* Checkpoint dense weights (attention, router, embeddings) are bf16 with biases. */
    if (!has_dtype(c->weight_dtypes, SY_DTYPE_BF16)) {
        sy_str_appendf(why, "takes weights of ");
        dtype_list(why, c->weight_dtypes);
        return refuse(why, key, "linear.plugin", ", not the checkpoint's bf16");
    }
    if (!has_dtype(c->act_dtypes, n->act_dtype))
        return dtype_refused(why, key, "model.dtype", "takes activations of", c->act_dtypes, n->act_dtype);
    /* The router's and the output's logits are f32 under any model.dtype. */
    if (!has_dtype(c->act_dtypes, SY_DTYPE_F32)) {
        sy_str_appendf(why, "takes activations of ");
        dtype_list(why, c->act_dtypes);
        return refuse(why, key, "model.dtype", " only, and the logits it writes are f32 under any model.dtype");
    }
    if (!c->has_bias)
        return refuse(why, key, "linear.plugin", "ignores biases, which gpt-oss projections have");
    return 1;
}

sy_compose_match_fn sy_compose_matcher(int32_t kind)
{
    switch (kind) {
    case SY_KIND_KV_LAYOUT: return match_kv_layout;
    case SY_KIND_ATTENTION: return match_attention;
    case SY_KIND_MOE: return match_moe;
    case SY_KIND_NORM: return match_norm;
    case SY_KIND_ROPE: return match_rope;
    case SY_KIND_LINEAR: return match_linear;
    default: return NULL;
    }
}
