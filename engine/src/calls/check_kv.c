/* Call-boundary checks of kv_layout.write and kv_layout.gather (checks.h). */
#include <stdio.h>

#include "calls/check_tensor.h"
#include "calls/checks.h"
#include "util/strbuf.h"

sy_status sy_check_kv_geometry(const char *op, const sy_kv_geometry *g, sy_error *err)
{
    if (g->struct_size < sizeof(sy_kv_geometry))
        return sy_fail(err, SY_E_INVALID, "%s: geom.struct_size %u is smaller than sy_kv_geometry v1 (%zu)", op,
                       g->struct_size, sizeof(sy_kv_geometry));
    if (g->layout == SY_LAYOUT_INVALID)
        return sy_fail(err, SY_E_INVALID, "%s: geom.layout is 0", op);
    if (sy_dtype_size(g->store_dtype) == 0)
        return sy_fail(err, SY_E_INVALID, "%s: geom.store_dtype %d is not a dtype", op, g->store_dtype);
    if (g->num_pages == 0 || g->page_size == 0 || g->kv_heads == 0 || g->head_dim == 0)
        return sy_fail(err, SY_E_INVALID, "%s: geom num_pages %u, page_size %u, kv_heads %u, head_dim %u must be positive",
                       op, g->num_pages, g->page_size, g->kv_heads, g->head_dim);
    if ((uint64_t)g->num_pages * g->page_size > (uint64_t)INT32_MAX + 1u)
        return sy_fail(err, SY_E_INVALID, "%s: geom num_pages %u x page_size %u slots exceed int32 slot numbers", op,
                       g->num_pages, g->page_size);
    if (g->k_elems == 0 || g->v_elems == 0)
        return sy_fail(err, SY_E_INVALID, "%s: geom.k_elems / v_elems are 0: ops.geometry has not filled the geometry",
                       op);
    return SY_OK;
}

static uint64_t pool_slots(const sy_kv_geometry *g)
{
    return (uint64_t)g->num_pages * g->page_size;
}

/* slots [T] and the optional slot_map [N]: int32, contiguous, host copies given. */
static sy_status check_slot_tensors(const char *op, const sy_tensor *slots, int64_t T, const sy_tensor *slot_map,
                                    const int32_t *slots_host, const int32_t *slot_map_host, sy_error *err)
{
    int64_t want_t[1] = {T}, any[1] = {SY_CALL_ANY};
    sy_status st;
    if ((st = sy_call_check_tensor(op, "slots", slots, SY_CALL_INDEX_DTYPES, 1, want_t, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "slots", slots, 0, err)) != SY_OK)
        return st;
    if (T > 0 && !slots_host)
        return sy_fail(err, SY_E_INVALID, "%s: no host copy of slots to check", op);
    if (slot_map->data) {
        if ((st = sy_call_check_tensor(op, "slot_map", slot_map, SY_CALL_INDEX_DTYPES, 1, any, err)) != SY_OK ||
            (st = sy_call_check_packed(op, "slot_map", slot_map, 0, err)) != SY_OK)
            return st;
        if (!slot_map_host)
            return sy_fail(err, SY_E_INVALID, "%s: no host copy of slot_map to check", op);
    }
    return SY_OK;
}

/* Every slot resolves into the pool; write skips negative slots before and after the map, gather
 * reads every slot and so accepts none. */
static sy_status check_slot_values(const char *op, const sy_kv_geometry *g, int64_t T, const sy_tensor *slot_map,
                                   const int32_t *slots_host, const int32_t *slot_map_host, int skip_negative,
                                   sy_error *err)
{
    uint64_t n_slots = pool_slots(g);
    for (int64_t t = 0; t < T; t++) {
        int64_t s = slots_host[t];
        if (s < 0 && skip_negative)
            continue;
        if (s < 0)
            return sy_fail(err, SY_E_INVALID, "%s: slots[%lld] = %lld; gather reads every slot, none may be negative",
                           op, (long long)t, (long long)s);
        if (slot_map->data) {
            if (s >= slot_map->shape[0])
                return sy_fail(err, SY_E_INVALID, "%s: slots[%lld] = %lld is outside slot_map (length %lld)", op,
                               (long long)t, (long long)s, (long long)slot_map->shape[0]);
            int64_t m = slot_map_host[s];
            if (m < 0 && skip_negative)
                continue;
            if (m < 0 || (uint64_t)m >= n_slots)
                return sy_fail(err, SY_E_INVALID,
                               "%s: slot_map[%lld] = %lld (for slots[%lld]) is outside the pool (slots 0..%llu)", op,
                               (long long)s, (long long)m, (long long)t, (unsigned long long)(n_slots - 1));
            continue;
        }
        if ((uint64_t)s >= n_slots)
            return sy_fail(err, SY_E_INVALID, "%s: slots[%lld] = %lld is outside the pool (slots 0..%llu: %u pages of %u)",
                           op, (long long)t, (long long)s, (unsigned long long)(n_slots - 1), g->num_pages,
                           g->page_size);
    }
    return SY_OK;
}

sy_status sy_check_kv_write(const sy_kv_write_args *a, const int32_t *slots_host, const int32_t *slot_map_host,
                            sy_error *err)
{
    const char *op = "kv_layout.write";
    sy_status st;
    if ((st = sy_call_check_args_size(op, a->struct_size, sizeof(sy_kv_write_args), err)) != SY_OK)
        return st;
    if ((st = sy_check_kv_geometry(op, &a->geom, err)) != SY_OK)
        return st;
    int64_t want[3] = {SY_CALL_ANY, a->geom.kv_heads, a->geom.head_dim};
    if ((st = sy_call_check_tensor(op, "k", &a->k, SY_CALL_FLOAT_DTYPES, 3, want, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "k", &a->k, 1, err)) != SY_OK ||
        (st = sy_call_check_like(op, "v", &a->v, "k", &a->k, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "v", &a->v, 1, err)) != SY_OK)
        return st;
    if (!a->k_cache || !a->v_cache)
        return sy_fail(err, SY_E_INVALID, "%s: k_cache or v_cache is NULL", op);
    if (a->geom.store_dtype == SY_DTYPE_FP8_E4M3 &&
        ((st = sy_call_check_scale(op, "k_scale", a->k_scale, err)) != SY_OK ||
         (st = sy_call_check_scale(op, "v_scale", a->v_scale, err)) != SY_OK))
        return st;
    int64_t T = a->k.shape[0];
    if ((st = check_slot_tensors(op, &a->slots, T, &a->slot_map, slots_host, slot_map_host, err)) != SY_OK)
        return st;
    return check_slot_values(op, &a->geom, T, &a->slot_map, slots_host, slot_map_host, 1, err);
}

sy_status sy_check_kv_gather(const sy_kv_gather_args *a, const int32_t *slots_host, const int32_t *slot_map_host,
                             sy_error *err)
{
    const char *op = "kv_layout.gather";
    sy_status st;
    if ((st = sy_call_check_args_size(op, a->struct_size, sizeof(sy_kv_gather_args), err)) != SY_OK)
        return st;
    if ((st = sy_check_kv_geometry(op, &a->geom, err)) != SY_OK)
        return st;
    int64_t want[3] = {SY_CALL_ANY, a->geom.kv_heads, a->geom.head_dim};
    uint32_t store = SY_DTYPE_BIT(a->geom.store_dtype);
    if (a->k_out.data && a->k_out.dtype != a->geom.store_dtype)
        return sy_fail(err, SY_E_INVALID, "%s: k_out has dtype %s; gather writes the pool's store dtype %s", op,
                       sy_dtype_name(a->k_out.dtype), sy_dtype_name(a->geom.store_dtype));
    if ((st = sy_call_check_tensor(op, "k_out", &a->k_out, store, 3, want, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "k_out", &a->k_out, 0, err)) != SY_OK ||
        (st = sy_call_check_like(op, "v_out", &a->v_out, "k_out", &a->k_out, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "v_out", &a->v_out, 0, err)) != SY_OK)
        return st;
    if (!a->k_cache || !a->v_cache)
        return sy_fail(err, SY_E_INVALID, "%s: k_cache or v_cache is NULL", op);
    int64_t T = a->k_out.shape[0];
    if ((st = check_slot_tensors(op, &a->slots, T, &a->slot_map, slots_host, slot_map_host, err)) != SY_OK)
        return st;
    return check_slot_values(op, &a->geom, T, &a->slot_map, slots_host, slot_map_host, 0, err);
}
