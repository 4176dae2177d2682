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
#include "switchyard/plugin.h"

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
SY_HD uint64_t sy_kv_5d_k_offset_at(const sy_kv_dims *g, uint64_t page, uint64_t off, uint32_t h, uint32_t d)
{
    uint64_t P = g->page_size, X = g->vec, D = g->head_dim;
    return page * g->kv_heads * D * P + h * D * P + (d / X) * P * X + off * X + d % X;
}

/* vectorized_5d V: (pages, H, P/X, D, X) -> page*H*D*P + h*D*P + (off/X)*D*X + d*X + off%X. */
SY_HD uint64_t sy_kv_5d_v_offset_at(const sy_kv_dims *g, uint64_t page, uint64_t off, uint32_t h, uint32_t d)
{
    uint64_t P = g->page_size, X = g->vec, D = g->head_dim;
    return page * g->kv_heads * D * P + h * D * P + (off / X) * D * X + d * X + off % X;
}

SY_HD uint64_t sy_kv_5d_k_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    return sy_kv_5d_k_offset_at(g, (uint64_t)slot / g->page_size, (uint64_t)slot % g->page_size, h, d);
}

SY_HD uint64_t sy_kv_5d_v_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    return sy_kv_5d_v_offset_at(g, (uint64_t)slot / g->page_size, (uint64_t)slot % g->page_size, h, d);
}

SY_HD uint64_t sy_kv_k_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    return g->layout == SY_LAYOUT_VECTORIZED_5D ? sy_kv_5d_k_offset(g, slot, h, d) : sy_kv_nhd_offset(g, slot, h, d);
}

SY_HD uint64_t sy_kv_v_offset(const sy_kv_dims *g, int64_t slot, uint32_t h, uint32_t d)
{
    return g->layout == SY_LAYOUT_VECTORIZED_5D ? sy_kv_5d_v_offset(g, slot, h, d) : sy_kv_nhd_offset(g, slot, h, d);
}

/* X for a layout and store dtype: 16 bytes of elements for vectorized_5d, 1 for nhd; 0 when the
 * dtype has no size. */
SY_HD uint32_t sy_kv_vec_for(uint32_t layout, int32_t store_dtype)
{
    /* tensor.h's sy_dtype_size is host-only; pools hold these element types. */
    uint32_t bytes = store_dtype == SY_DTYPE_F32 ? 4u
                     : (store_dtype == SY_DTYPE_BF16 || store_dtype == SY_DTYPE_F16) ? 2u
                     : (store_dtype == SY_DTYPE_FP8_E4M3 || store_dtype == SY_DTYPE_U8) ? 1u
                                                                                         : 0u;
    if (bytes == 0)
        return 0;
    return layout == SY_LAYOUT_VECTORIZED_5D ? 16u / bytes : 1u;
}

/* Elements of one layer's K (and V) pool: both layouts store every (slot, head, dim) once. */
SY_HD uint64_t sy_kv_pool_elems(uint32_t num_pages, uint32_t page_size, uint32_t kv_heads, uint32_t head_dim)
{
    return (uint64_t)num_pages * page_size * kv_heads * head_dim;
}

SY_HD sy_kv_dims sy_kv_dims_of(const sy_kv_geometry *g)
{
    sy_kv_dims d;
    d.layout = g->layout;
    d.page_size = g->page_size;
    d.kv_heads = g->kv_heads;
    d.head_dim = g->head_dim;
    d.vec = g->vec;
    return d;
}

/* The D elements of one (slot, head) row, as runs of contiguous-or-strided elements: element d is
 * at base + (d / run) * run_stride + (d % run) * elem_stride. Row walkers (writers, gatherers,
 * tile loaders) use this instead of one offset call per element, and agree with the offset
 * functions above by construction (tests/kv checks both against docs/plugin-abi.md's formulas).
 *   nhd:              one run of D, elem_stride 1
 *   vectorized_5d K:  runs of X contiguous elements, P*X apart
 *   vectorized_5d V:  one run of D, elem_stride X (a token's values interleave with X-1 others) */
typedef struct sy_kv_row {
    uint64_t base;
    uint32_t run;
    uint32_t run_stride;
    uint32_t elem_stride;
} sy_kv_row;

/* Rows of the token at offset `off` of page `page` (no division: walkers step through a page). */
SY_HD sy_kv_row sy_kv_k_row_at(const sy_kv_dims *g, uint64_t page, uint64_t off, uint32_t h)
{
    sy_kv_row r;
    if (g->layout == SY_LAYOUT_VECTORIZED_5D) {
        r.base = sy_kv_5d_k_offset_at(g, page, off, h, 0);
        r.run = g->vec;
        r.run_stride = g->page_size * g->vec;
    } else {
        r.base = sy_kv_nhd_offset(g, (int64_t)(page * g->page_size + off), h, 0);
        r.run = g->head_dim;
        r.run_stride = g->head_dim;
    }
    r.elem_stride = 1;
    return r;
}

SY_HD sy_kv_row sy_kv_v_row_at(const sy_kv_dims *g, uint64_t page, uint64_t off, uint32_t h)
{
    sy_kv_row r;
    int v5d = g->layout == SY_LAYOUT_VECTORIZED_5D;
    r.base = v5d ? sy_kv_5d_v_offset_at(g, page, off, h, 0)
                 : sy_kv_nhd_offset(g, (int64_t)(page * g->page_size + off), h, 0);
    r.run = g->head_dim;
    r.run_stride = g->head_dim;
    r.elem_stride = v5d ? g->vec : 1u;
    return r;
}

SY_HD sy_kv_row sy_kv_k_row(const sy_kv_dims *g, int64_t slot, uint32_t h)
{
    return sy_kv_k_row_at(g, (uint64_t)slot / g->page_size, (uint64_t)slot % g->page_size, h);
}

SY_HD sy_kv_row sy_kv_v_row(const sy_kv_dims *g, int64_t slot, uint32_t h)
{
    return sy_kv_v_row_at(g, (uint64_t)slot / g->page_size, (uint64_t)slot % g->page_size, h);
}

/* A row of a plain [T, H, D] tensor (D contiguous) in the same form, so linear K/V and pooled K/V
 * share one loader. */
SY_HD sy_kv_row sy_kv_linear_row(uint64_t base, uint32_t head_dim)
{
    sy_kv_row r;
    r.base = base;
    r.run = head_dim;
    r.run_stride = head_dim;
    r.elem_stride = 1;
    return r;
}

SY_HD uint64_t sy_kv_row_elem(const sy_kv_row *r, uint32_t d)
{
    return r->base + (uint64_t)(d / r->run) * r->run_stride + (uint64_t)(d % r->run) * r->elem_stride;
}

#endif
