/* A kv_layout fixture for the nhd layout with one planted defect in write: the offset of element
 * (slot, head, dim) is slot*H*D + dim*H + head instead of slot*H*D + head*D + dim (head and dim
 * strides swapped, a transposition that stays inside the token's row, so nothing crashes and only a
 * byte comparison shows it). geometry and gather are kv_nhd's and correct. */
#include "fixture_plugin.h"
#include "sy_numeric.h"

static const sy_kv_layout_caps caps = {
    .struct_size = sizeof(sy_kv_layout_caps),
    .layout = SY_LAYOUT_NHD,
    .store_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3),
    .src_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .vector_bytes = 0,
    .default_page_size = 16,
    .max_page_size = 1u << 16,
    .max_head_dim = 1u << 12,
    .features = SY_KV_FEAT_SLOT_MAP | SY_KV_FEAT_FP8_SCALES | SY_KV_FEAT_ANY_TOKEN_STRIDE,
};

/* geometry and gather are kv_nhd's: callable before init, so the delegate is looked up per call. */
static sy_status geometry(sy_kv_geometry *g, sy_error *err)
{
    const sy_kv_layout_ops *inner = conf_delegate()->ops;
    return inner->geometry(g, err);
}

static float load(int32_t dtype, const void *p, int64_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void store(int32_t dtype, void *pool, uint64_t o, float x, float scale)
{
    if (dtype == SY_DTYPE_BF16)
        ((uint16_t *)pool)[o] = sy_f32_to_bf16(x);
    else if (dtype == SY_DTYPE_FP8_E4M3)
        ((uint8_t *)pool)[o] = sy_f32_to_fp8e4m3(x / scale);
    else
        ((float *)pool)[o] = x;
}

static sy_status write(void *ctx, sy_stream stream, const sy_kv_write_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    (void)err;
    const uint64_t H = a->geom.kv_heads, D = a->geom.head_dim;
    const int32_t *slots = a->slots.data, *map = a->slot_map.data;
    for (int64_t t = 0; t < a->slots.shape[0]; t++) {
        int64_t slot = slots[t];
        if (slot >= 0 && map)
            slot = map[slot];
        if (slot < 0)
            continue;
        for (uint64_t h = 0; h < H; h++)
            for (uint64_t d = 0; d < D; d++) {
                uint64_t o = (uint64_t)slot * H * D + d * H + h; /* the defect: should be h * D + d */
                int64_t ki = t * a->k.stride[0] + (int64_t)h * a->k.stride[1] + (int64_t)d;
                int64_t vi = t * a->v.stride[0] + (int64_t)h * a->v.stride[1] + (int64_t)d;
                store(a->geom.store_dtype, a->k_cache, o, load(a->k.dtype, a->k.data, ki), a->k_scale);
                store(a->geom.store_dtype, a->v_cache, o, load(a->v.dtype, a->v.data, vi), a->v_scale);
            }
    }
    return SY_OK;
}

static sy_status gather(void *ctx, sy_stream stream, const sy_kv_gather_args *a, sy_error *err)
{
    (void)ctx; /* kv_nhd has no context */
    const sy_kv_layout_ops *inner = conf_delegate()->ops;
    return inner->gather(NULL, stream, a, err);
}

static const sy_kv_layout_ops ops = {sizeof(sy_kv_layout_ops), 0, geometry, write, gather};

CONF_FIXTURE_ENTRY(SY_KIND_KV_LAYOUT, CONF_FIXTURE_NAME, &caps, &ops, NULL, NULL)
