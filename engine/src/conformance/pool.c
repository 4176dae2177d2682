#include "conformance/pool.h"

#include <stdio.h>
#include <string.h>

#include "calls/checks.h"

const char *sy_conf_layout_reference(uint32_t layout)
{
    switch (layout) {
    case SY_LAYOUT_NHD: return "kv_nhd";
    case SY_LAYOUT_VECTORIZED_5D: return "kv_vectorized_5d";
    default: return NULL;
    }
}

const char *sy_conf_layout_tag(uint32_t layout, char *buf, size_t len)
{
    switch (layout) {
    case SY_LAYOUT_NHD: snprintf(buf, len, "nhd"); break;
    case SY_LAYOUT_VECTORIZED_5D: snprintf(buf, len, "5d"); break;
    default: snprintf(buf, len, "layout%u", layout); break;
    }
    return buf;
}

sy_status sy_conf_pool_geometry(sy_conf_run *run, uint32_t layout, int32_t store, uint32_t num_pages,
                                uint32_t page_size, uint32_t kv_heads, uint32_t head_dim, sy_kv_geometry *geom,
                                const sy_conf_plugin_ctx **writer, sy_error *err)
{
    const char *name = sy_conf_layout_reference(layout), *why = NULL;
    *writer = NULL;
    if (!name) {
        snprintf(err->msg, sizeof err->msg, "no in-tree layout has id %u, so no cpu reference writes its pools", layout);
        return SY_E_UNSUPPORTED;
    }
    *writer = sy_conf_reference(run, SY_KIND_KV_LAYOUT, name, &why);
    if (!*writer) {
        snprintf(err->msg, sizeof err->msg, "%s", why);
        return SY_E_INTERNAL;
    }
    memset(geom, 0, sizeof *geom);
    geom->struct_size = sizeof *geom;
    geom->layout = layout;
    geom->store_dtype = store;
    geom->num_pages = num_pages;
    geom->page_size = page_size;
    geom->kv_heads = kv_heads;
    geom->head_dim = head_dim;
    const sy_kv_layout_ops *ops = (*writer)->desc->ops;
    return ops->geometry(geom, err);
}

int sy_conf_pool_make(sy_conf_case *c, uint32_t layout, int32_t store, uint32_t num_pages, uint32_t page_size,
                      uint32_t kv_heads, uint32_t head_dim, float k_scale, float v_scale, sy_conf_pool *pool)
{
    sy_error err = {{0}};
    memset(pool, 0, sizeof *pool);
    sy_status st = sy_conf_pool_geometry(c->run, layout, store, num_pages, page_size, kv_heads, head_dim, &pool->geom,
                                         &pool->writer, &err);
    if (st == SY_E_UNSUPPORTED || st == SY_E_INVALID) {
        char tag[32];
        sy_conf_case_unsupported(c, "no %s pool holds this case: %s", sy_conf_layout_tag(layout, tag, sizeof tag),
                                 err.msg);
        return 0;
    }
    if (!sy_conf_case_call(c, "reference kv_layout.geometry", st, &err))
        return 0;
    size_t es = sy_dtype_size(store);
    pool->k_bytes = pool->geom.k_elems * es;
    pool->v_bytes = pool->geom.v_elems * es;
    pool->k = sy_conf_case_host(c, pool->k_bytes);
    pool->v = sy_conf_case_host(c, pool->v_bytes);
    pool->k_scale = store == SY_DTYPE_FP8_E4M3 ? k_scale : 1.0f;
    pool->v_scale = store == SY_DTYPE_FP8_E4M3 ? v_scale : 1.0f;
    return 1;
}

sy_kv_write_args sy_conf_pool_write_args(const sy_conf_pool *pool, int32_t src_dtype, int64_t tokens, void *k,
                                         void *v, int32_t *slots)
{
    sy_kv_write_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.geom = pool->geom;
    int64_t shape[3] = {tokens, pool->geom.kv_heads, pool->geom.head_dim};
    a.k = sy_tensor_contiguous(k, src_dtype, 3, shape);
    a.v = sy_tensor_contiguous(v, src_dtype, 3, shape);
    a.slots = sy_tensor_contiguous(slots, SY_DTYPE_I32, 1, shape);
    a.k_cache = pool->k;
    a.v_cache = pool->v;
    a.k_scale = pool->k_scale;
    a.v_scale = pool->v_scale;
    return a;
}

int sy_conf_pool_write(sy_conf_case *c, sy_conf_pool *pool, const sy_kv_write_args *a)
{
    sy_error err = {{0}};
    const sy_kv_layout_ops *ops = pool->writer->desc->ops;
    return sy_conf_case_call(c, "conformance suite: host check of the reference pool write",
                             sy_check_kv_write(a, a->slots.data, a->slot_map.data, &err), &err) &&
           sy_conf_case_call(c, "reference kv_layout.write", ops->write(pool->writer->ctx, NULL, a, &err), &err);
}

/* The inverse of the offset formulas of docs/plugin-abi.md (kv_layout), for messages only. */
void sy_conf_pool_describe(const void *user, uint64_t index, char *buf, size_t len)
{
    const sy_conf_pool_where *w = user;
    const sy_kv_geometry *g = &w->geom;
    uint64_t P = g->page_size, H = g->kv_heads, D = g->head_dim, X = g->vec ? g->vec : 1;
    uint64_t slot, head, dim;
    index += w->base;
    if (g->layout == SY_LAYOUT_VECTORIZED_5D) {
        uint64_t page = index / (H * D * P), rest = index % (H * D * P), off;
        head = rest / (D * P);
        rest %= D * P;
        if (w->is_v) { /* (pages, H, P/X, D, X) */
            off = rest / (D * X) * X + rest % X;
            dim = rest % (D * X) / X;
        } else { /* (pages, H, D/X, P, X) */
            dim = rest / (P * X) * X + rest % X;
            off = rest % (P * X) / X;
        }
        slot = page * P + off;
    } else {
        slot = index / (H * D);
        head = index / D % H;
        dim = index % D;
    }
    snprintf(buf, len, "element %llu (slot %llu = page %llu offset %llu, head %llu, dim %llu)",
             (unsigned long long)index, (unsigned long long)slot, (unsigned long long)(slot / P),
             (unsigned long long)(slot % P), (unsigned long long)head, (unsigned long long)dim);
}
