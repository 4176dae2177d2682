/* Element offsets of one (slot, head, dim) in one layer's K and V pools, per layout, for host and
 * device code alike. Every writer, gatherer and paged reader addresses the pool through these, so
 * a layout is defined in exactly one place.
 *
 * P = page size, H = kv heads, D = head dim, X = 16 / bytes(store dtype); page = s / P, off = s % P.
 * Source: SGLang memory_pool.py / attention utils.py (reshape_and_cache_shuffle_5d) and AITER
 * pa_decode_gluon, summarized in shared/reference/kv5d-attention.md. */
#ifndef SY_KV_ADDR_H
#define SY_KV_ADDR_H

#include <stdint.h>

#include "sy_portable.h"
#include "switchyard/caps.h"

typedef struct sy_kv_dims {
    uint32_t layout;    /* sy_kv_layout_id */
    uint32_t page_size; /* P */
    uint32_t kv_heads;  /* H */
    uint32_t head_dim;  /* D */
    uint32_t vec;       /* X */
} sy_kv_dims;

/* nhd: (pages * P, H, D) -> s*H*D + h*D + d, for K and V alike. */
SY_HD uint64_t sy_kv_nhd_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    return ((uint64_t)slot * g->kv_heads + h) * g->head_dim + d;
}

/* vectorized_5d K: (pages, H, D/X, P, X) -> page*H*D*P + h*D*P + (d/X)*P*X + off*X + d%X. */
SY_HD uint64_t sy_kv_5d_k_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    uint64_t P = g->page_size, X = g->vec, D = g->head_dim;
    uint64_t page = (uint64_t)slot / P, off = (uint64_t)slot % P;
    return page * g->kv_heads * D * P + h * D * P + (d / X) * P * X + off * X + d % X;
}

/* vectorized_5d V: (pages, H, P/X, D, X) -> page*H*D*P + h*D*P + (off/X)*D*X + d*X + off%X. */
SY_HD uint64_t sy_kv_5d_v_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    uint64_t P = g->page_size, X = g->vec, D = g->head_dim;
    uint64_t page = (uint64_t)slot / P, off = (uint64_t)slot % P;
    return page * g->kv_heads * D * P + h * D * P + (off / X) * D * X + d * X + off % X;
}

SY_HD uint64_t sy_kv_k_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    return g->layout == SY_LAYOUT_VECTORIZED_5D ? sy_kv_5d_k_offset(g, slot, h, d) : sy_kv_nhd_offset(g, slot, h, d);
}

SY_HD uint64_t sy_kv_v_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    return g->layout == SY_LAYOUT_VECTORIZED_5D ? sy_kv_5d_v_offset(g, slot, h, d) : sy_kv_nhd_offset(g, slot, h, d);
}

#endif
