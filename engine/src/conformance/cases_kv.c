/* kv_layout cases: write and gather, bit for bit against the cpu plugin of the same layout.
 *
 *   kv_layout.write   the plugin writes T tokens (some slots negative: skipped; optionally through a
 *                     full-to-SWA slot map with freed (0) and skipped (-1) entries) into a poisoned
 *                     pool; its K and V pools must equal the reference's byte for byte outside the
 *                     padding page, and its K/V inputs must be left untouched.
 *   kv_layout.gather  the reference's pool is copied to the plugin's backend and the plugin gathers
 *                     slots (repeats and padding-page slots included) to linear [T, H, D]; the output
 *                     must equal the reference's gather byte for byte.
 *   kv_layout.roundtrip  layouts without an in-tree reference (vendor ids): the plugin's own write
 *                     then gather must give exactly what the nhd reference gives for the same tokens.
 * Page 0 is excluded from the pool comparison: dummy writes (slot-map entries of 0) all land on its
 * first slot, in an order the ABI leaves open. */
#include <stdio.h>
#include <string.h>

#include "calls/checks.h"
#include "conformance/cases.h"
#include "conformance/pool.h"

typedef struct kv_shape {
    int32_t store, src;
    uint32_t page_size, heads, head_dim, tokens;
    uint8_t slot_map;    /* slots go through a full-to-SWA map */
    uint8_t token_pad;   /* K/V rows wider than H*D (a slice of a fused QKV buffer) */
    uint8_t quick;
} kv_shape;

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16, FP8 = SY_DTYPE_FP8_E4M3 };
enum { ROW_PAD = 24 }; /* extra elements per token row in token_pad cases */

static const kv_shape shapes[] = {
    {BF16, F32, 16, 8, 64, 300, 0, 0, 1},   {BF16, BF16, 64, 8, 64, 300, 1, 0, 1},
    {FP8, F32, 16, 8, 64, 300, 1, 0, 1},    {FP8, BF16, 128, 4, 48, 517, 0, 1, 1},
    {F32, F32, 64, 3, 40, 100, 0, 0, 0},    {BF16, F32, 128, 1, 128, 1000, 1, 1, 0},
    {FP8, F32, 16, 8, 64, 4100, 0, 0, 0},   {BF16, BF16, 16, 12, 80, 77, 0, 1, 0},
    {FP8, F32, 64, 2, 40, 90, 1, 0, 0},     {BF16, F32, 64, 8, 64, 2049, 1, 0, 0},
};

static void shape_name(char *buf, size_t len, const char *op, uint32_t layout, const kv_shape *s)
{
    char tag[32];
    if (strcmp(op, "gather") == 0)
        snprintf(buf, len, "kv_layout.gather/%s/%s/P%u/H%uD%u/T%u%s", sy_conf_layout_tag(layout, tag, sizeof tag),
                 sy_conf_dtype_tag(s->store), s->page_size, s->heads, s->head_dim, s->tokens,
                 s->slot_map ? "/slotmap" : "");
    else
        snprintf(buf, len, "kv_layout.%s/%s/%s-from-%s/P%u/H%uD%u/T%u%s%s", op,
                 sy_conf_layout_tag(layout, tag, sizeof tag), sy_conf_dtype_tag(s->store), sy_conf_dtype_tag(s->src),
                 s->page_size, s->heads, s->head_dim, s->tokens, s->slot_map ? "/slotmap" : "",
                 s->token_pad ? "/tokenstride" : "");
}

/* What the caps say about the shape beyond sy_check_kv_*_caps: size limits and the vector rule. */
static int caps_cover(sy_conf_case *c, const sy_kv_layout_caps *caps, const kv_shape *s)
{
    if (s->page_size > caps->max_page_size || s->head_dim > caps->max_head_dim) {
        sy_conf_case_unsupported(c, "caps allow page sizes up to %u and head dims up to %u, not P %u / D %u",
                                 caps->max_page_size, caps->max_head_dim, s->page_size, s->head_dim);
        return 0;
    }
    uint32_t x = caps->vector_bytes ? caps->vector_bytes / (uint32_t)sy_dtype_size(s->store) : 1;
    if (x > 1 && (s->page_size % x || s->head_dim % x)) {
        sy_conf_case_unsupported(c, "caps vector_bytes %u: a %s store needs page size and head dim multiples of %u, "
                                 "not P %u / D %u",
                                 caps->vector_bytes, sy_dtype_name(s->store), x, s->page_size, s->head_dim);
        return 0;
    }
    return 1;
}

static int caps_verdict(sy_conf_case *c, sy_status st, const sy_error *err)
{
    if (st == SY_E_UNSUPPORTED)
        sy_conf_case_unsupported(c, "%s", err->msg);
    else
        sy_conf_case_call(c, "conformance suite: caps check", st, err);
    return st == SY_OK;
}

/* The plugin's geometry for the shape; it must accept what its caps declare. */
static int plugin_geometry(sy_conf_case *c, const kv_shape *s, uint32_t num_pages, sy_kv_geometry *g)
{
    const sy_kv_layout_caps *caps = c->target->p.desc->caps;
    const sy_kv_layout_ops *ops = c->target->p.desc->ops;
    sy_error err = {{0}};
    memset(g, 0, sizeof *g);
    g->struct_size = sizeof *g;
    g->layout = caps->layout;
    g->store_dtype = s->store;
    g->num_pages = num_pages;
    g->page_size = s->page_size;
    g->kv_heads = s->heads;
    g->head_dim = s->head_dim;
    if (!sy_conf_case_call(c, "kv_layout.geometry (on a pool its caps declare)", ops->geometry(g, &err), &err))
        return 0;
    if (sy_check_kv_geometry("kv_layout.geometry", g, &err) != SY_OK) {
        sy_conf_case_fail(c, "%s", err.msg);
        return 0;
    }
    return 1;
}

/* Host inputs of a case: tokens, their slots (and slot map), K and V rows. */
typedef struct kv_inputs {
    uint32_t num_pages;
    int64_t tokens, row;        /* row: elements between tokens of k / v */
    int32_t *slots;
    int32_t *slot_map;          /* NULL without a map */
    int64_t map_len;
    void *k, *v;
    float k_scale, v_scale;
} kv_inputs;

/* Distinct pool slots outside the padding page, in random order: n of them. */
static void pick_slots(sy_conf_case *c, uint32_t num_pages, uint32_t P, int32_t *out, int64_t n)
{
    uint32_t candidates = (num_pages - 1) * P;
    uint32_t *perm = sy_conf_case_host(c, (size_t)candidates * sizeof *perm);
    sy_conf_shuffle_u32(&c->rng, perm, candidates);
    for (int64_t t = 0; t < n; t++)
        out[t] = (int32_t)(P + perm[t % candidates]);
}

/* Write inputs: ~6% skipped tokens; with a map, slots index a map twice the pool's size whose used
 * entries are distinct pool slots, ~10% freed (0) and ~5% skipped (-1). */
static void make_write_inputs(sy_conf_case *c, const kv_shape *s, kv_inputs *in)
{
    const uint32_t P = s->page_size;
    memset(in, 0, sizeof *in);
    in->tokens = s->tokens;
    in->num_pages = (s->tokens + P - 1) / P * 3 / 2 + 2;
    in->slots = sy_conf_case_host(c, (size_t)in->tokens * sizeof(int32_t));
    int32_t *pool_slots = sy_conf_case_host(c, (size_t)in->tokens * sizeof(int32_t));
    pick_slots(c, in->num_pages, P, pool_slots, in->tokens);
    if (s->slot_map) {
        in->map_len = 2 * (int64_t)in->num_pages * P;
        in->slot_map = sy_conf_case_host(c, (size_t)in->map_len * sizeof(int32_t));
        uint32_t *perm = sy_conf_case_host(c, (size_t)in->map_len * sizeof *perm);
        sy_conf_shuffle_u32(&c->rng, perm, (uint32_t)in->map_len);
        for (int64_t i = 0; i < in->map_len; i++)
            in->slot_map[i] = 0;
        for (int64_t t = 0; t < in->tokens; t++) {
            uint32_t u = sy_conf_rng_below(&c->rng, 100);
            in->slots[t] = (int32_t)perm[t];
            in->slot_map[perm[t]] = u < 10 ? 0 : u < 15 ? -1 : pool_slots[t];
        }
    } else {
        memcpy(in->slots, pool_slots, (size_t)in->tokens * sizeof(int32_t));
    }
    for (int64_t t = 0; t < in->tokens; t++)
        if (sy_conf_rng_below(&c->rng, 16) == 0)
            in->slots[t] = -1 - (int32_t)sy_conf_rng_below(&c->rng, 3);
    in->k_scale = s->store == FP8 ? 0.37f : 1.0f;
    in->v_scale = s->store == FP8 ? 1.9f : 1.0f;
    in->row = (int64_t)s->heads * s->head_dim + (s->token_pad ? ROW_PAD : 0);
    size_t n = (size_t)(in->tokens * in->row), es = sy_dtype_size(s->src);
    float *kf = sy_conf_case_host(c, n * sizeof(float)), *vf = sy_conf_case_host(c, n * sizeof(float));
    sy_conf_fill_normal(&c->rng, kf, n, 1.0);
    sy_conf_fill_normal(&c->rng, vf, n, 2.0);
    sy_conf_plant_conversion_probes(&c->rng, kf, n, in->k_scale);
    sy_conf_plant_conversion_probes(&c->rng, vf, n, in->v_scale);
    in->k = sy_conf_case_host(c, n * es);
    in->v = sy_conf_case_host(c, n * es);
    sy_conf_store(s->src, in->k, kf, n);
    sy_conf_store(s->src, in->v, vf, n);
    if (s->token_pad) /* the gap between rows holds NaN: a writer reading it stores NaN somewhere */
        for (int64_t t = 0; t < in->tokens; t++) {
            memset((char *)in->k + (size_t)(t * in->row + in->row - ROW_PAD) * es, 0xFF, ROW_PAD * es);
            memset((char *)in->v + (size_t)(t * in->row + in->row - ROW_PAD) * es, 0xFF, ROW_PAD * es);
        }
}

static sy_kv_write_args write_args(const sy_kv_geometry *g, const kv_shape *s, const kv_inputs *in, void *k, void *v,
                                   void *slots, void *slot_map, void *k_cache, void *v_cache)
{
    sy_kv_write_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.geom = *g;
    int64_t shape[3] = {in->tokens, s->heads, s->head_dim};
    a.k = sy_tensor_contiguous(k, s->src, 3, shape);
    a.v = sy_tensor_contiguous(v, s->src, 3, shape);
    a.k.stride[0] = a.v.stride[0] = in->row;
    a.slots = sy_tensor_contiguous(slots, SY_DTYPE_I32, 1, shape);
    if (slot_map)
        a.slot_map = sy_tensor_contiguous(slot_map, SY_DTYPE_I32, 1, &in->map_len);
    a.k_cache = k_cache;
    a.v_cache = v_cache;
    a.k_scale = in->k_scale;
    a.v_scale = in->v_scale;
    return a;
}

static sy_kv_gather_args gather_args(const sy_kv_geometry *g, int64_t tokens, int64_t map_len, void *slots,
                                     void *slot_map, const void *k_cache, const void *v_cache, void *k_out, void *v_out)
{
    sy_kv_gather_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.geom = *g;
    int64_t shape[3] = {tokens, g->kv_heads, g->head_dim};
    a.slots = sy_tensor_contiguous(slots, SY_DTYPE_I32, 1, shape);
    if (slot_map)
        a.slot_map = sy_tensor_contiguous(slot_map, SY_DTYPE_I32, 1, &map_len);
    a.k_cache = k_cache;
    a.v_cache = v_cache;
    a.k_out = sy_tensor_contiguous(k_out, g->store_dtype, 3, shape);
    a.v_out = sy_tensor_contiguous(v_out, g->store_dtype, 3, shape);
    return a;
}

/* The reference op of `writer` on host buffers, host checks first. */
static int reference_write(sy_conf_case *c, const sy_conf_plugin_ctx *ref, const sy_kv_write_args *a,
                           const kv_inputs *in)
{
    sy_error err = {{0}};
    const sy_kv_layout_ops *ops = ref->desc->ops;
    return sy_conf_case_call(c, "conformance suite: host check of the reference write",
                             sy_check_kv_write(a, in->slots, in->slot_map, &err), &err) &&
           sy_conf_case_call(c, "reference kv_layout.write", ops->write(ref->ctx, NULL, a, &err), &err);
}

static int reference_gather(sy_conf_case *c, const sy_conf_plugin_ctx *ref, const sy_kv_gather_args *a,
                            const int32_t *slots, const int32_t *slot_map)
{
    sy_error err = {{0}};
    const sy_kv_layout_ops *ops = ref->desc->ops;
    return sy_conf_case_call(c, "conformance suite: host check of the reference gather",
                             sy_check_kv_gather(a, slots, slot_map, &err), &err) &&
           sy_conf_case_call(c, "reference kv_layout.gather", ops->gather(ref->ctx, NULL, a, &err), &err);
}

/* Device copies of the inputs; the plugin's write runs on them (host checks first, timed). */
typedef struct device_inputs {
    void *k, *v, *slots, *slot_map;
} device_inputs;

static int upload_inputs(sy_conf_case *c, const kv_shape *s, const kv_inputs *in, device_inputs *d)
{
    size_t in_bytes = (size_t)(in->tokens * in->row) * sy_dtype_size(s->src);
    d->k = sy_conf_case_upload(c, in->k, in_bytes);
    d->v = sy_conf_case_upload(c, in->v, in_bytes);
    d->slots = sy_conf_case_upload(c, in->slots, (size_t)in->tokens * sizeof(int32_t));
    d->slot_map = in->slot_map ? sy_conf_case_upload(c, in->slot_map, (size_t)in->map_len * sizeof(int32_t)) : NULL;
    return sy_conf_case_ok(c);
}

static int plugin_write(sy_conf_case *c, const sy_kv_write_args *a, const kv_inputs *in)
{
    sy_error err = {{0}};
    const sy_kv_layout_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_call(c, "host check of kv_layout.write", sy_check_kv_write(a, in->slots, in->slot_map, &err),
                           &err) ||
        !sy_conf_case_op_begin(c))
        return 0;
    return sy_conf_case_op_end(c, "kv_layout.write", ops->write(c->target->p.ctx, c->target->p.side->stream, a, &err),
                               &err);
}

static int plugin_gather(sy_conf_case *c, const sy_kv_gather_args *a, const int32_t *slots, const int32_t *slot_map)
{
    sy_error err = {{0}};
    const sy_kv_layout_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_call(c, "host check of kv_layout.gather", sy_check_kv_gather(a, slots, slot_map, &err), &err) ||
        !sy_conf_case_op_begin(c))
        return 0;
    return sy_conf_case_op_end(c, "kv_layout.gather", ops->gather(c->target->p.ctx, c->target->p.side->stream, a, &err),
                               &err);
}

/* Pools of a known layout, compared outside the padding page. */
static void compare_pools(sy_conf_case *c, const sy_kv_geometry *g, const void *test_k, const void *test_v,
                          const sy_conf_pool *ref)
{
    size_t es = sy_dtype_size(g->store_dtype);
    uint64_t page_elems = (uint64_t)g->page_size * g->kv_heads * g->head_dim;
    sy_conf_pool_where wk = {*g, 0, page_elems}, wv = {*g, 1, page_elems};
    sy_conf_where where_k = {0, {0}, sy_conf_pool_describe, &wk}, where_v = {0, {0}, sy_conf_pool_describe, &wv};
    sy_conf_check_bits(c, "k_cache", (const char *)test_k + page_elems * es, (const char *)ref->k + page_elems * es,
                       g->k_elems - page_elems, es, &where_k);
    sy_conf_check_bits(c, "v_cache", (const char *)test_v + page_elems * es, (const char *)ref->v + page_elems * es,
                       g->v_elems - page_elems, es, &where_v);
}

/* ------------------------------------------------------------------------------------------ */

static void write_case(sy_conf_case *c, const kv_shape *s, const sy_conf_plugin_ctx *ref)
{
    kv_inputs in;
    make_write_inputs(c, s, &in);
    sy_kv_geometry g;
    if (!plugin_geometry(c, s, in.num_pages, &g))
        return;
    sy_conf_pool ref_pool;
    if (!sy_conf_pool_make(c, g.layout, s->store, in.num_pages, s->page_size, s->heads, s->head_dim, in.k_scale,
                           in.v_scale, &ref_pool))
        return;
    if (ref_pool.geom.k_elems != g.k_elems || ref_pool.geom.v_elems != g.v_elems) {
        sy_conf_case_fail(c, "kv_layout.geometry gives %llu / %llu K / V elements, the reference %llu / %llu",
                          (unsigned long long)g.k_elems, (unsigned long long)g.v_elems,
                          (unsigned long long)ref_pool.geom.k_elems, (unsigned long long)ref_pool.geom.v_elems);
        return;
    }
    sy_kv_write_args ra = write_args(&ref_pool.geom, s, &in, in.k, in.v, in.slots, in.slot_map, ref_pool.k, ref_pool.v);
    if (!reference_write(c, ref, &ra, &in))
        return;

    device_inputs d;
    size_t es = sy_dtype_size(s->store);
    if (!upload_inputs(c, s, &in, &d))
        return;
    void *k_cache = sy_conf_case_dev(c, g.k_elems * es), *v_cache = sy_conf_case_dev(c, g.v_elems * es);
    if (!k_cache || !v_cache)
        return;
    sy_kv_write_args a = write_args(&g, s, &in, d.k, d.v, d.slots, d.slot_map, k_cache, v_cache);
    if (!plugin_write(c, &a, &in))
        return;
    void *k_pool = sy_conf_case_download(c, k_cache, g.k_elems * es);
    void *v_pool = sy_conf_case_download(c, v_cache, g.v_elems * es);
    size_t in_bytes = (size_t)(in.tokens * in.row) * sy_dtype_size(s->src);
    void *k_after = sy_conf_case_download(c, d.k, in_bytes), *v_after = sy_conf_case_download(c, d.v, in_bytes);
    if (!sy_conf_case_ok(c))
        return;
    compare_pools(c, &g, k_pool, v_pool, &ref_pool);
    sy_conf_check_bits(c, "k input after write", k_after, in.k, in_bytes, 1, NULL);
    sy_conf_check_bits(c, "v input after write", v_after, in.v, in_bytes, 1, NULL);
}

/* Slots for a gather: valid pool slots in random order with repeats, a few on the padding page;
 * through a map when the shape has one (its entries all valid, 0 included). */
static void make_gather_slots(sy_conf_case *c, const kv_shape *s, uint32_t num_pages, kv_inputs *in)
{
    const uint32_t P = s->page_size, pool_slots = num_pages * P;
    in->tokens = s->tokens;
    in->slots = sy_conf_case_host(c, (size_t)in->tokens * sizeof(int32_t));
    for (int64_t t = 0; t < in->tokens; t++)
        in->slots[t] = sy_conf_rng_below(&c->rng, 32) == 0 ? (int32_t)sy_conf_rng_below(&c->rng, P)
                                                             : (int32_t)sy_conf_rng_below(&c->rng, pool_slots);
    if (!s->slot_map)
        return;
    in->map_len = 2 * (int64_t)pool_slots;
    in->slot_map = sy_conf_case_host(c, (size_t)in->map_len * sizeof(int32_t));
    for (int64_t i = 0; i < in->map_len; i++)
        in->slot_map[i] = sy_conf_rng_below(&c->rng, 10) == 0 ? 0 : (int32_t)sy_conf_rng_below(&c->rng, pool_slots);
    for (int64_t t = 0; t < in->tokens; t++)
        in->slots[t] = (int32_t)sy_conf_rng_below(&c->rng, (uint32_t)in->map_len);
}

/* A pool whose every slot outside the padding page holds a random token, written by `pool->writer`. */
static int fill_pool(sy_conf_case *c, sy_conf_pool *pool, int32_t src)
{
    const sy_kv_geometry *g = &pool->geom;
    int64_t T = (int64_t)(g->num_pages - 1) * g->page_size;
    size_t n = (size_t)T * g->kv_heads * g->head_dim;
    float *kf = sy_conf_case_host(c, n * sizeof(float)), *vf = sy_conf_case_host(c, n * sizeof(float));
    sy_conf_fill_normal(&c->rng, kf, n, 1.0);
    sy_conf_fill_normal(&c->rng, vf, n, 2.0);
    sy_conf_plant_conversion_probes(&c->rng, kf, n, pool->k_scale);
    sy_conf_plant_conversion_probes(&c->rng, vf, n, pool->v_scale);
    void *k = sy_conf_case_host(c, n * sy_dtype_size(src)), *v = sy_conf_case_host(c, n * sy_dtype_size(src));
    sy_conf_store(src, k, kf, n);
    sy_conf_store(src, v, vf, n);
    int32_t *slots = sy_conf_case_host(c, (size_t)T * sizeof(int32_t));
    for (int64_t t = 0; t < T; t++)
        slots[t] = (int32_t)(g->page_size + t);
    sy_kv_write_args a = sy_conf_pool_write_args(pool, src, T, k, v, slots);
    return sy_conf_pool_write(c, pool, &a);
}

static void gather_case(sy_conf_case *c, const kv_shape *s)
{
    uint32_t num_pages = (s->tokens + s->page_size - 1) / s->page_size + 3;
    sy_kv_geometry g;
    if (!plugin_geometry(c, s, num_pages, &g))
        return;
    sy_conf_pool pool;
    if (!sy_conf_pool_make(c, g.layout, s->store, num_pages, s->page_size, s->heads, s->head_dim, 0.37f, 1.9f,
                           &pool) ||
        !fill_pool(c, &pool, s->src))
        return;
    kv_inputs in;
    memset(&in, 0, sizeof in);
    make_gather_slots(c, s, num_pages, &in);
    size_t es = sy_dtype_size(s->store), out_bytes = (size_t)in.tokens * s->heads * s->head_dim * es;
    void *k_ref = sy_conf_case_host(c, out_bytes), *v_ref = sy_conf_case_host(c, out_bytes);
    sy_kv_gather_args ra = gather_args(&pool.geom, in.tokens, in.map_len, in.slots, in.slot_map, pool.k, pool.v, k_ref,
                                       v_ref);
    if (!reference_gather(c, pool.writer, &ra, in.slots, in.slot_map))
        return;

    void *k_cache = sy_conf_case_upload(c, pool.k, pool.k_bytes), *v_cache = sy_conf_case_upload(c, pool.v, pool.v_bytes);
    void *slots = sy_conf_case_upload(c, in.slots, (size_t)in.tokens * sizeof(int32_t));
    void *map = in.slot_map ? sy_conf_case_upload(c, in.slot_map, (size_t)in.map_len * sizeof(int32_t)) : NULL;
    void *k_out = sy_conf_case_dev(c, out_bytes), *v_out = sy_conf_case_dev(c, out_bytes);
    if (!sy_conf_case_ok(c))
        return;
    sy_kv_gather_args a = gather_args(&g, in.tokens, in.map_len, slots, map, k_cache, v_cache, k_out, v_out);
    if (!plugin_gather(c, &a, in.slots, in.slot_map))
        return;
    void *k_got = sy_conf_case_download(c, k_out, out_bytes), *v_got = sy_conf_case_download(c, v_out, out_bytes);
    if (!sy_conf_case_ok(c))
        return;
    sy_conf_where w = sy_conf_shape(3, in.tokens, s->heads, s->head_dim, 0);
    sy_conf_check_bits(c, "k_out", k_got, k_ref, out_bytes / es, es, &w);
    sy_conf_check_bits(c, "v_out", v_got, v_ref, out_bytes / es, es, &w);
}

/* Vendor layouts: the plugin's write then gather against the nhd reference's, token by token. */
static void roundtrip_case(sy_conf_case *c, const kv_shape *s)
{
    kv_inputs in;
    make_write_inputs(c, s, &in);
    sy_kv_geometry g;
    if (!plugin_geometry(c, s, in.num_pages, &g))
        return;
    sy_conf_pool nhd;
    if (!sy_conf_pool_make(c, SY_LAYOUT_NHD, s->store, in.num_pages, s->page_size, s->heads, s->head_dim, in.k_scale,
                           in.v_scale, &nhd))
        return;
    sy_kv_write_args ra = write_args(&nhd.geom, s, &in, in.k, in.v, in.slots, in.slot_map, nhd.k, nhd.v);
    if (!reference_write(c, nhd.writer, &ra, &in))
        return;
    /* Gather back every token that was written to a slot no other token shares. */
    int32_t *back = sy_conf_case_host(c, (size_t)in.tokens * sizeof(int32_t));
    int64_t n_back = 0;
    for (int64_t t = 0; t < in.tokens; t++) {
        int32_t slot = in.slots[t];
        if (slot >= 0 && in.slot_map)
            slot = in.slot_map[slot];
        if (slot >= (int32_t)s->page_size)
            back[n_back++] = in.slots[t];
    }
    size_t es = sy_dtype_size(s->store), out_bytes = (size_t)n_back * s->heads * s->head_dim * es;
    void *k_ref = sy_conf_case_host(c, out_bytes), *v_ref = sy_conf_case_host(c, out_bytes);
    sy_kv_gather_args rg = gather_args(&nhd.geom, n_back, in.map_len, back, in.slot_map, nhd.k, nhd.v, k_ref, v_ref);
    if (!reference_gather(c, nhd.writer, &rg, back, in.slot_map))
        return;

    device_inputs d;
    if (!upload_inputs(c, s, &in, &d))
        return;
    void *k_cache = sy_conf_case_dev(c, g.k_elems * es), *v_cache = sy_conf_case_dev(c, g.v_elems * es);
    void *back_dev = sy_conf_case_upload(c, back, (size_t)(n_back ? n_back : 1) * sizeof(int32_t));
    void *k_out = sy_conf_case_dev(c, out_bytes), *v_out = sy_conf_case_dev(c, out_bytes);
    if (!sy_conf_case_ok(c))
        return;
    sy_kv_write_args a = write_args(&g, s, &in, d.k, d.v, d.slots, d.slot_map, k_cache, v_cache);
    sy_kv_gather_args ga = gather_args(&g, n_back, in.map_len, back_dev, d.slot_map, k_cache, v_cache, k_out, v_out);
    if (!plugin_write(c, &a, &in) || !plugin_gather(c, &ga, back, in.slot_map))
        return;
    void *k_got = sy_conf_case_download(c, k_out, out_bytes), *v_got = sy_conf_case_download(c, v_out, out_bytes);
    if (!sy_conf_case_ok(c))
        return;
    sy_conf_where w = sy_conf_shape(3, n_back, s->heads, s->head_dim, 0);
    sy_conf_check_bits(c, "k round trip", k_got, k_ref, out_bytes / es, es, &w);
    sy_conf_check_bits(c, "v round trip", v_got, v_ref, out_bytes / es, es, &w);
}

/* Caps of the plugin against a shape, with placeholder tensors: only metadata is read. */
static int shape_supported(sy_conf_case *c, const kv_shape *s, int gather)
{
    const sy_plugin_desc *p = c->target->p.desc;
    if (!caps_cover(c, p->caps, s))
        return 0;
    static int32_t placeholder;
    sy_kv_geometry g;
    memset(&g, 0, sizeof g);
    g.layout = ((const sy_kv_layout_caps *)p->caps)->layout;
    g.store_dtype = s->store;
    kv_inputs in;
    memset(&in, 0, sizeof in);
    in.tokens = 2;
    in.row = (int64_t)s->heads * s->head_dim + (s->token_pad ? ROW_PAD : 0);
    in.map_len = 1;
    void *map = s->slot_map ? &placeholder : NULL;
    sy_error err = {{0}};
    if (gather) {
        sy_kv_gather_args a = gather_args(&g, 2, 1, &placeholder, map, &placeholder, &placeholder, &placeholder,
                                          &placeholder);
        return caps_verdict(c, sy_check_kv_gather_caps(p, &a, &err), &err);
    }
    sy_kv_write_args a = write_args(&g, s, &in, &placeholder, &placeholder, &placeholder, map, &placeholder,
                                    &placeholder);
    return caps_verdict(c, sy_check_kv_write_caps(p, &a, &err), &err);
}

void sy_conf_cases_kv_layout(sy_conf_run *run, const sy_conf_target *t)
{
    const sy_kv_layout_caps *caps = t->p.desc->caps;
    const char *ref_name = sy_conf_layout_reference(caps->layout), *why = NULL;
    const sy_conf_plugin_ctx *ref = ref_name ? sy_conf_reference(run, SY_KIND_KV_LAYOUT, ref_name, &why)
                                             : sy_conf_reference(run, SY_KIND_KV_LAYOUT, "kv_nhd", &why);
    sy_conf_note_reference(run, t, ref);
    static const char *const ops[] = {"write", "gather"};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const kv_shape *s = &shapes[i];
        if (sy_conf_quick(run) && !s->quick)
            continue;
        for (size_t op = 0; op < (ref_name ? 2u : 1u); op++) {
            char name[192];
            shape_name(name, sizeof name, ref_name ? ops[op] : "roundtrip", caps->layout, s);
            sy_conf_case *c = sy_conf_case_begin(run, t, name);
            if (!c)
                continue;
            if (!ref)
                sy_conf_case_fail(c, "no reference: %s", why);
            else if (!ref_name) {
                if (shape_supported(c, s, 0) && shape_supported(c, s, 1))
                    roundtrip_case(c, s);
            } else if (shape_supported(c, s, op == 1)) {
                if (op == 0)
                    write_case(c, s, ref);
                else
                    gather_case(c, s);
            }
            sy_conf_case_end(c);
        }
    }
}
