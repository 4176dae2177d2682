/* Host implementation of the kv_layout ops for every layout that sy_kv_addr.h addresses: pool
 * geometry, K/V write (scatter into the pool) and gather (the exact inverse). The layout is a
 * parameter, so kv_nhd and kv_vectorized_5d share all of it; a fused rope + KV write on the host
 * stores its rotated rows through sy_kv_store_token.
 *
 * Store rule (docs/plugin-abi.md, kv_layout): f32 and bf16 pools hold the value rounded to the store type
 * (bf16 round to nearest even); an fp8_e4m3 pool holds fp8_e4m3(x / scale) with a per-tensor fp32
 * scale (a true division, not a multiplication by 1/scale, so that every writer of the project
 * can agree bit for bit); reading back multiplies by the scale. */
#ifndef SY_KV_STORE_CPU_H
#define SY_KV_STORE_CPU_H

#include <stdint.h>

#include "sy_kv_addr.h"
#include "switchyard/plugin.h"

/* One layer's pool as writers see it. */
typedef struct sy_kv_pool {
    sy_kv_dims dims;
    int32_t store_dtype; /* f32, bf16 or fp8_e4m3 */
    void *k;
    void *v;
    float k_scale; /* fp8 only: the pool holds fp8(x / scale); ignored for other stores */
    float v_scale;
} sy_kv_pool;

/* Store dtypes and K/V source dtypes the host implementation handles. */
#define SY_KV_CPU_STORE_DTYPES \
    (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3))
#define SY_KV_CPU_SRC_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

/* Validates the geometry for `layout` (dtype supported, dimensions positive, slots addressable by
 * int32, vectorized_5d: page_size and head_dim multiples of X = 16 / store bytes) and fills vec,
 * k_elems and v_elems. */
sy_status sy_kv_cpu_geometry(uint32_t layout, sy_kv_geometry *geom, sy_error *err);

/* Stores one (slot, head) row of head_dim source elements (f32 or bf16) into a pool. */
void sy_kv_store_row(void *cache, int32_t store_dtype, const sy_kv_row *row, uint32_t head_dim, const void *src,
                     int32_t src_dtype, float scale);

/* Stores one token's K and V, each [H][D] with heads head_stride source elements apart, at `slot`. */
void sy_kv_store_token(const sy_kv_pool *pool, int64_t slot, const void *k, const void *v, int32_t src_dtype,
                       int64_t head_stride);

/* The kv_layout ops for `layout`. write skips slots < 0 (before and after the slot map); both
 * reject a slot outside the pool instead of touching memory out of bounds. */
sy_status sy_kv_cpu_write(uint32_t layout, const sy_kv_write_args *args, sy_error *err);
sy_status sy_kv_cpu_gather(uint32_t layout, const sy_kv_gather_args *args, sy_error *err);

#endif
