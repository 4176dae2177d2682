#include "kv_store_cpu.h"

#include <string.h>

#include "sy_numeric.h"
#include "sy_op_check.h"

static const char *layout_label(uint32_t layout)
{
    switch (layout) {
    case SY_LAYOUT_NHD: return "nhd";
    case SY_LAYOUT_VECTORIZED_5D: return "vectorized_5d";
    default: return "unknown";
    }
}

sy_status sy_kv_cpu_geometry(uint32_t layout, sy_kv_geometry *g, sy_error *err)
{
    if (!g || g->struct_size < sizeof(sy_kv_geometry))
        return sy_op_fail(err, SY_E_INVALID, "geometry: struct_size %u is smaller than sy_kv_geometry v1 (%zu)",
                       g ? g->struct_size : 0u, sizeof(sy_kv_geometry));
    if (g->layout != layout)
        return sy_op_fail(err, SY_E_INVALID, "geometry: layout %u (%s) given to the %s layout plugin", g->layout,
                       layout_label(g->layout), layout_label(layout));
    if (g->store_dtype < 0 || g->store_dtype >= 32 || !(SY_KV_CPU_STORE_DTYPES & SY_DTYPE_BIT(g->store_dtype)))
        return sy_op_fail(err, SY_E_UNSUPPORTED, "geometry: store dtype %s is not supported (f32, bf16, fp8_e4m3)",
                       sy_op_dtype_name(g->store_dtype));
    if (g->num_pages == 0 || g->page_size == 0 || g->kv_heads == 0 || g->head_dim == 0)
        return sy_op_fail(err, SY_E_INVALID,
                       "geometry: num_pages %u, page_size %u, kv_heads %u, head_dim %u must all be positive",
                       g->num_pages, g->page_size, g->kv_heads, g->head_dim);
    uint32_t x = sy_kv_vec_for(layout, g->store_dtype);
    if (g->page_size % x != 0 || g->head_dim % x != 0)
        return sy_op_fail(err, SY_E_INVALID,
                       "geometry: %s with %s store needs page_size and head_dim multiples of X = 16 / %zu = %u; "
                       "got page_size %u, head_dim %u",
                       layout_label(layout), sy_op_dtype_name(g->store_dtype), sy_dtype_size(g->store_dtype), x,
                       g->page_size, g->head_dim);
    /* Slots are int32 in the ABI: every slot of the pool must be one. */
    uint64_t slots = (uint64_t)g->num_pages * g->page_size;
    if (slots > (uint64_t)INT32_MAX + 1u)
        return sy_op_fail(err, SY_E_INVALID, "geometry: num_pages %u x page_size %u = %llu slots exceed the int32 range",
                       g->num_pages, g->page_size, (unsigned long long)slots);
    g->vec = x;
    g->k_elems = sy_kv_pool_elems(g->num_pages, g->page_size, g->kv_heads, g->head_dim);
    g->v_elems = g->k_elems;
    return SY_OK;
}

static float load_src(const void *src, int32_t dt, uint32_t i)
{
    return dt == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)src)[i]) : ((const float *)src)[i];
}

static void store_elem(void *cache, int32_t dt, uint64_t o, float x, float scale)
{
    switch (dt) {
    case SY_DTYPE_F32: ((float *)cache)[o] = x; break;
    case SY_DTYPE_BF16: ((uint16_t *)cache)[o] = sy_f32_to_bf16(x); break;
    default: ((uint8_t *)cache)[o] = sy_f32_to_fp8e4m3(x / scale); break;
    }
}

void sy_kv_store_row(void *cache, int32_t store_dtype, const sy_kv_row *row, uint32_t head_dim, const void *src,
                     int32_t src_dtype, float scale)
{
    for (uint32_t r0 = 0, run = 0; r0 < head_dim; r0 += row->run, run++) {
        uint64_t o = row->base + (uint64_t)run * row->run_stride;
        for (uint32_t i = 0; i < row->run; i++)
            store_elem(cache, store_dtype, o + (uint64_t)i * row->elem_stride, load_src(src, src_dtype, r0 + i), scale);
    }
}

void sy_kv_store_token(const sy_kv_pool *pool, int64_t slot, const void *k, const void *v, int32_t src_dtype,
                       int64_t head_stride)
{
    size_t es = sy_dtype_size(src_dtype);
    for (uint32_t h = 0; h < pool->dims.kv_heads; h++) {
        sy_kv_row kr = sy_kv_k_row(&pool->dims, slot, h), vr = sy_kv_v_row(&pool->dims, slot, h);
        size_t off = (size_t)h * (size_t)head_stride * es;
        sy_kv_store_row(pool->k, pool->store_dtype, &kr, pool->dims.head_dim, (const char *)k + off, src_dtype,
                        pool->k_scale);
        sy_kv_store_row(pool->v, pool->store_dtype, &vr, pool->dims.head_dim, (const char *)v + off, src_dtype,
                        pool->v_scale);
    }
}

/* Copies one pooled row to D contiguous elements of the store dtype, bit for bit. */
static void load_row_raw(const void *cache, size_t es, const sy_kv_row *row, uint32_t head_dim, void *dst)
{
    for (uint32_t d = 0; d < head_dim; d++)
        memcpy((char *)dst + d * es, (const char *)cache + sy_kv_row_elem(row, d) * es, es);
}

/* Resolves token t's slot through the optional slot map. Returns 0 when the token is skipped (write
 * only), 1 with *slot set, or -1 with err filled when an index is out of range. */
static int resolve_slot(const sy_tensor *slots, const sy_tensor *slot_map, int64_t t, uint64_t pool_slots,
                        int skip_negative, int64_t *slot, sy_error *err)
{
    int64_t s = ((const int32_t *)slots->data)[t * slots->stride[0]];
    if (s < 0 && skip_negative)
        return 0;
    if (slot_map->data) {
        if (s < 0 || s >= slot_map->shape[0]) {
            sy_op_fail(err, SY_E_INVALID, "slots[%lld] = %lld is outside slot_map (length %lld)", (long long)t,
                    (long long)s, (long long)slot_map->shape[0]);
            return -1;
        }
        int64_t mapped = ((const int32_t *)slot_map->data)[s * slot_map->stride[0]];
        if (mapped < 0 && skip_negative)
            return 0;
        if (mapped < 0 || (uint64_t)mapped >= pool_slots) {
            sy_op_fail(err, SY_E_INVALID, "slot_map[%lld] = %lld (for slots[%lld]) is outside the pool (%llu slots)",
                    (long long)s, (long long)mapped, (long long)t, (unsigned long long)pool_slots);
            return -1;
        }
        *slot = mapped;
        return 1;
    }
    if (s < 0 || (uint64_t)s >= pool_slots) {
        sy_op_fail(err, SY_E_INVALID, "slots[%lld] = %lld is outside the pool (%llu slots)", (long long)t, (long long)s,
                (unsigned long long)pool_slots);
        return -1;
    }
    *slot = s;
    return 1;
}

static sy_status check_index(const sy_tensor *t, const char *name, int optional, sy_error *err)
{
    if (optional && !t->data)
        return SY_OK;
    if (!t->data || t->dtype != SY_DTYPE_I32 || t->ndim != 1)
        return sy_op_fail(err, SY_E_INVALID, "%s must be a 1-d int32 tensor (got dtype %s, ndim %d)", name,
                       sy_op_dtype_name(t->dtype), t->ndim);
    return SY_OK;
}

sy_status sy_kv_cpu_write(uint32_t layout, const sy_kv_write_args *a, sy_error *err)
{
    sy_kv_geometry g = a->geom;
    sy_status st = sy_kv_cpu_geometry(layout, &g, err);
    if (st != SY_OK)
        return st;
    if (a->k.dtype != a->v.dtype || a->k.dtype < 0 || a->k.dtype >= 32 ||
        !(SY_KV_CPU_SRC_DTYPES & SY_DTYPE_BIT(a->k.dtype)))
        return sy_op_fail(err, SY_E_UNSUPPORTED, "write: k and v must both be f32 or bf16 (got %s and %s)",
                       sy_op_dtype_name(a->k.dtype), sy_op_dtype_name(a->v.dtype));
    if ((st = check_index(&a->slots, "write: slots", 0, err)) != SY_OK ||
        (st = check_index(&a->slot_map, "write: slot_map", 1, err)) != SY_OK)
        return st;
    if (a->k.stride[1] != a->v.stride[1])
        return sy_op_fail(err, SY_E_INVALID, "write: k and v head strides differ (%lld, %lld)", (long long)a->k.stride[1],
                       (long long)a->v.stride[1]);
    sy_kv_pool pool = {sy_kv_dims_of(&g), g.store_dtype, a->k_cache, a->v_cache, a->k_scale, a->v_scale};
    size_t es = sy_dtype_size(a->k.dtype);
    uint64_t pool_slots = (uint64_t)g.num_pages * g.page_size;
    /* All slots first, so that a bad one fails the call before anything is written. */
    for (int64_t t = 0; t < a->slots.shape[0]; t++) {
        int64_t slot;
        if (resolve_slot(&a->slots, &a->slot_map, t, pool_slots, 1, &slot, err) < 0)
            return SY_E_INVALID;
    }
    for (int64_t t = 0; t < a->slots.shape[0]; t++) {
        int64_t slot;
        if (resolve_slot(&a->slots, &a->slot_map, t, pool_slots, 1, &slot, err) == 0)
            continue;
        const char *k = (const char *)a->k.data + (size_t)(t * a->k.stride[0]) * es;
        const char *v = (const char *)a->v.data + (size_t)(t * a->v.stride[0]) * es;
        sy_kv_store_token(&pool, slot, k, v, a->k.dtype, a->k.stride[1]);
    }
    return SY_OK;
}

sy_status sy_kv_cpu_gather(uint32_t layout, const sy_kv_gather_args *a, sy_error *err)
{
    sy_kv_geometry g = a->geom;
    sy_status st = sy_kv_cpu_geometry(layout, &g, err);
    if (st != SY_OK)
        return st;
    if (a->k_out.dtype != g.store_dtype || a->v_out.dtype != g.store_dtype)
        return sy_op_fail(err, SY_E_INVALID, "gather: k_out and v_out must be %s like the pool (got %s and %s)",
                       sy_op_dtype_name(g.store_dtype), sy_op_dtype_name(a->k_out.dtype), sy_op_dtype_name(a->v_out.dtype));
    if ((st = check_index(&a->slots, "gather: slots", 0, err)) != SY_OK ||
        (st = check_index(&a->slot_map, "gather: slot_map", 1, err)) != SY_OK)
        return st;
    sy_kv_dims dims = sy_kv_dims_of(&g);
    size_t es = sy_dtype_size(g.store_dtype);
    uint64_t pool_slots = (uint64_t)g.num_pages * g.page_size;
    for (int64_t t = 0; t < a->slots.shape[0]; t++) {
        int64_t slot;
        if (resolve_slot(&a->slots, &a->slot_map, t, pool_slots, 0, &slot, err) < 0)
            return SY_E_INVALID;
    }
    for (int64_t t = 0; t < a->slots.shape[0]; t++) {
        int64_t slot;
        resolve_slot(&a->slots, &a->slot_map, t, pool_slots, 0, &slot, err);
        for (uint32_t h = 0; h < g.kv_heads; h++) {
            sy_kv_row kr = sy_kv_k_row(&dims, slot, h), vr = sy_kv_v_row(&dims, slot, h);
            size_t row = ((size_t)t * g.kv_heads + h) * g.head_dim * es;
            load_row_raw(a->k_cache, es, &kr, g.head_dim, (char *)a->k_out.data + row);
            load_row_raw(a->v_cache, es, &vr, g.head_dim, (char *)a->v_out.data + row);
        }
    }
    return SY_OK;
}
