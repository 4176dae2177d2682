/* KV pools of conformance cases: one layer's K and V pool in a given layout, written on the host by
 * the in-tree cpu kv_layout plugin of that layout. Attention and fused rope cases build their pools
 * here, so the plugin under test reads (or is compared with) exactly the bytes the layout defines. */
#ifndef SY_CONF_POOL_H
#define SY_CONF_POOL_H

#include "conformance/case.h"

/* The in-tree cpu plugin of a layout ("kv_nhd", "kv_vectorized_5d"), NULL for other layouts. */
const char *sy_conf_layout_reference(uint32_t layout);
/* Short name for case names: "nhd", "5d", or "layout<id>". */
const char *sy_conf_layout_tag(uint32_t layout, char *buf, size_t len);

typedef struct sy_conf_pool {
    sy_kv_geometry geom;
    const sy_conf_plugin_ctx *writer; /* the cpu reference of geom.layout */
    void *k, *v;                      /* host memory, 0xFF (NaN) before anything is written */
    size_t k_bytes, v_bytes;
    float k_scale, v_scale;           /* fp8 stores; 1 otherwise */
} sy_conf_pool;

/* A geometry filled by the layout's reference (SY_E_UNSUPPORTED when no in-tree layout has that
 * id, or the reference's status when it refuses the combination). */
sy_status sy_conf_pool_geometry(sy_conf_run *run, uint32_t layout, int32_t store, uint32_t num_pages,
                                uint32_t page_size, uint32_t kv_heads, uint32_t head_dim, sy_kv_geometry *geom,
                                const sy_conf_plugin_ctx **writer, sy_error *err);

/* Allocates the pool in the case's host memory. Returns 0 with the case not-supported or failed
 * when the geometry cannot be made. */
int sy_conf_pool_make(sy_conf_case *c, uint32_t layout, int32_t store, uint32_t num_pages, uint32_t page_size,
                      uint32_t kv_heads, uint32_t head_dim, float k_scale, float v_scale, sy_conf_pool *pool);

/* kv_layout.write args of T tokens of host K/V ([T, H, D] of src_dtype, contiguous) at host slots. */
sy_kv_write_args sy_conf_pool_write_args(const sy_conf_pool *pool, int32_t src_dtype, int64_t tokens, void *k,
                                         void *v, int32_t *slots);
/* Writes them with the reference (host checks first). Returns 0 with the case failed on an error. */
int sy_conf_pool_write(sy_conf_case *c, sy_conf_pool *pool, const sy_kv_write_args *args);

/* Words for an element offset of a known layout's K or V pool: "slot 37 (page 2 offset 5) head 1
 * dim 12"; for index messages of sy_conf_check_bits. */
typedef struct sy_conf_pool_where {
    sy_kv_geometry geom;
    int is_v;
    uint64_t base; /* added to the index: the compared range's first element in the pool */
} sy_conf_pool_where;
void sy_conf_pool_describe(const void *user, uint64_t index, char *buf, size_t len);

#endif
