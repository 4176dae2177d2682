/* A call held against what its plugin declared (checks.h): composition checks the same records at
 * config time; these catch an engine that builds a call the plan did not negotiate. */
#include <stdio.h>

#include "calls/checks.h"
#include "switchyard/switchyard.h"
#include "util/strbuf.h"

static int in_mask(uint32_t mask, int32_t dtype)
{
    return dtype > 0 && dtype < 32 && (mask & SY_DTYPE_BIT(dtype));
}

static int in_range(uint32_t v, uint32_t lo, uint32_t hi, uint32_t multiple)
{
    return v >= lo && v <= hi && (multiple <= 1 || v % multiple == 0);
}

static sy_status need_kind(const sy_plugin_desc *p, int32_t kind, sy_error *err)
{
    if (!p || (int32_t)p->kind != kind || !p->caps || !p->ops)
        return sy_fail(err, SY_E_INVALID, "plugin %s is not a %s plugin with caps and ops", p ? p->name : "(null)",
                       sy_kind_name(kind));
    return SY_OK;
}

/* A [T, H, D] tensor whose rows are wider than its heads: a slice of fused QKV rows. */
static int rows_padded(const sy_tensor *t)
{
    return t->data && t->ndim == 3 && t->shape[0] > 1 && t->stride[0] != t->shape[1] * t->shape[2];
}

/* Features, dtypes, head dim and GQA ratio common to decode and prefill. */
static sy_status attention_common(const sy_plugin_desc *p, const char *op, int32_t kv_dtype, int32_t q_dtype,
                                  uint32_t head_dim, int64_t q_heads, uint32_t kv_heads, int32_t window,
                                  int has_sinks, int padded_rows, sy_error *err)
{
    const sy_attention_caps *c = p->caps;
    if (!in_mask(c->kv_dtypes, kv_dtype))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) does not declare KV dtype %s", op, p->name,
                       p->backend, sy_dtype_name(kv_dtype));
    if (!in_mask(c->q_dtypes, q_dtype))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) does not declare q dtype %s", op, p->name,
                       p->backend, sy_dtype_name(q_dtype));
    if (!in_range(head_dim, c->head_dim_min, c->head_dim_max, c->head_dim_multiple))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) supports head dims %u..%u (multiple of %u), not %u",
                       op, p->name, p->backend, c->head_dim_min, c->head_dim_max, c->head_dim_multiple, head_dim);
    if (kv_heads == 0 || q_heads / kv_heads > (int64_t)c->max_gqa_ratio)
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) supports a GQA ratio up to %u, not %lld / %u", op,
                       p->name, p->backend, c->max_gqa_ratio, (long long)q_heads, kv_heads);
    struct {
        int used;
        uint32_t bit;
        const char *what;
    } uses[] = {{window > 0, SY_ATTN_SLIDING_WINDOW, "sliding_window"},
                {has_sinks, SY_ATTN_SINKS, "sinks"},
                {kv_dtype == SY_DTYPE_FP8_E4M3, SY_ATTN_FP8_SCALES, "fp8_scales"},
                {padded_rows, SY_ATTN_ROW_STRIDE, "row_stride (rows wider than their heads)"}};
    for (size_t i = 0; i < sizeof uses / sizeof uses[0]; i++)
        if (uses[i].used && !(c->features & uses[i].bit))
            return sy_fail(err, SY_E_UNSUPPORTED, "%s: the call uses %s, which plugin %s (%s) does not declare", op,
                           uses[i].what, p->name, p->backend);
    return SY_OK;
}

/* The pool a paged op reads: its layout among those read natively, its page size in range. */
static sy_status pool_caps(const sy_plugin_desc *p, const char *op, const sy_kv_geometry *g, sy_error *err)
{
    const sy_attention_caps *c = p->caps;
    int reads_layout = 0;
    for (uint32_t i = 0; i < c->n_layouts && i < SY_MAX_CAPS_LAYOUTS; i++)
        reads_layout |= c->layouts[i] == g->layout;
    if (!reads_layout)
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) does not read layout %s natively", op, p->name,
                       p->backend, sy_layout_name(g->layout));
    if (!in_range(g->page_size, c->page_size_min, c->page_size_max, c->page_size_multiple))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) supports page sizes %u..%u (multiple of %u), not %u",
                       op, p->name, p->backend, c->page_size_min, c->page_size_max, c->page_size_multiple,
                       g->page_size);
    return SY_OK;
}

sy_status sy_check_decode_caps(const sy_plugin_desc *p, const sy_attn_decode_args *a, sy_error *err)
{
    const char *op = "attention.decode_paged";
    sy_status st = need_kind(p, SY_KIND_ATTENTION, err);
    if (st != SY_OK)
        return st;
    const sy_attention_caps *c = p->caps;
    const sy_attention_ops *o = p->ops;
    if (!(c->features & SY_ATTN_DECODE_PAGED) || !o->decode_paged)
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) has no decode_paged", op, p->name, p->backend);
    if ((st = pool_caps(p, op, &a->geom, err)) != SY_OK)
        return st;
    if (a->num_splits > 1 && !(c->features & SY_ATTN_SPLIT_K))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: num_splits %d, but plugin %s (%s) does not declare split_k", op,
                       a->num_splits, p->name, p->backend);
    return attention_common(p, op, a->geom.store_dtype, a->q.dtype, a->geom.head_dim, a->q.shape[1],
                            a->geom.kv_heads, a->window, a->sinks.data != NULL,
                            rows_padded(&a->q) || rows_padded(&a->out), err);
}

sy_status sy_check_prefill_paged_caps(const sy_plugin_desc *p, const sy_attn_prefill_paged_args *a, sy_error *err)
{
    const char *op = "attention.prefill_paged";
    sy_status st = need_kind(p, SY_KIND_ATTENTION, err);
    if (st != SY_OK)
        return st;
    const sy_attention_caps *c = p->caps;
    if (!(c->features & SY_ATTN_PREFILL_PAGED) || !sy_attention_prefill_paged(p->ops))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) has no prefill_paged", op, p->name, p->backend);
    if ((st = pool_caps(p, op, &a->geom, err)) != SY_OK)
        return st;
    return attention_common(p, op, a->geom.store_dtype, a->q.dtype, a->geom.head_dim, a->q.shape[1],
                            a->geom.kv_heads, a->window, a->sinks.data != NULL,
                            rows_padded(&a->q) || rows_padded(&a->out), err);
}

sy_status sy_check_prefill_caps(const sy_plugin_desc *p, const sy_attn_prefill_args *a, sy_error *err)
{
    const char *op = "attention.prefill_linear";
    sy_status st = need_kind(p, SY_KIND_ATTENTION, err);
    if (st != SY_OK)
        return st;
    const sy_attention_caps *c = p->caps;
    const sy_attention_ops *o = p->ops;
    if (!(c->features & SY_ATTN_PREFILL_LINEAR) || !o->prefill_linear)
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) has no prefill_linear", op, p->name, p->backend);
    return attention_common(p, op, a->k.dtype, a->q.dtype, (uint32_t)a->k.shape[2], a->q.shape[1],
                            (uint32_t)a->k.shape[1], a->window, a->sinks.data != NULL,
                            rows_padded(&a->q) || rows_padded(&a->out) || rows_padded(&a->k) || rows_padded(&a->v), err);
}

/* Layout id, store dtype and slot map support common to write and gather. */
static sy_status kv_common(const sy_plugin_desc *p, const char *op, const sy_kv_geometry *g, int has_slot_map,
                           sy_error *err)
{
    sy_status st = need_kind(p, SY_KIND_KV_LAYOUT, err);
    if (st != SY_OK)
        return st;
    const sy_kv_layout_caps *c = p->caps;
    if (c->layout != g->layout)
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: geometry layout %s, but plugin %s (%s) is layout %s", op,
                       sy_layout_name(g->layout), p->name, p->backend, sy_layout_name(c->layout));
    if (!in_mask(c->store_dtypes, g->store_dtype))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) does not declare store dtype %s", op, p->name,
                       p->backend, sy_dtype_name(g->store_dtype));
    if (has_slot_map && !(c->features & SY_KV_FEAT_SLOT_MAP))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: the call passes a slot map, which plugin %s (%s) does not declare",
                       op, p->name, p->backend);
    return SY_OK;
}

sy_status sy_check_kv_write_caps(const sy_plugin_desc *p, const sy_kv_write_args *a, sy_error *err)
{
    const char *op = "kv_layout.write";
    sy_status st = kv_common(p, op, &a->geom, a->slot_map.data != NULL, err);
    if (st != SY_OK)
        return st;
    const sy_kv_layout_caps *c = p->caps;
    if (!in_mask(c->src_dtypes, a->k.dtype))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: plugin %s (%s) does not declare K/V source dtype %s", op, p->name,
                       p->backend, sy_dtype_name(a->k.dtype));
    if (a->geom.store_dtype == SY_DTYPE_FP8_E4M3 && !(c->features & SY_KV_FEAT_FP8_SCALES))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: fp8 store, but plugin %s (%s) does not declare fp8_scales", op,
                       p->name, p->backend);
    int64_t packed_row = (int64_t)a->geom.kv_heads * a->geom.head_dim;
    if (a->k.shape[0] > 1 && (a->k.stride[0] != packed_row || a->v.stride[0] != packed_row) &&
        !(c->features & SY_KV_FEAT_ANY_TOKEN_STRIDE))
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: K/V token stride %lld / %lld, but plugin %s (%s) needs packed rows (%lld)",
                       op, (long long)a->k.stride[0], (long long)a->v.stride[0], p->name, p->backend,
                       (long long)packed_row);
    return SY_OK;
}

sy_status sy_check_kv_gather_caps(const sy_plugin_desc *p, const sy_kv_gather_args *a, sy_error *err)
{
    return kv_common(p, "kv_layout.gather", &a->geom, a->slot_map.data != NULL, err);
}
