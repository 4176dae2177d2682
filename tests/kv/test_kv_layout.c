/* The kv_nhd and kv_vectorized_5d plugins, loaded through the registry: geometry rules, the byte
 * position of every element against docs/plugin-abi.md's formulas (written out again here, not taken from
 * sy_kv_addr.h), write / gather round trips bit for bit, skipped slots, the SWA slot map, fp8
 * scales, and the engine's call-boundary checks of write and gather. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls/checks.h"
#include "cpu_plugin_fixture.h"
#include "kv_pool.h"
#include "sy_numeric.h"
#include "sy_test.h"

static const sy_plugin_desc *kv_plugin(uint32_t layout)
{
    return sy_cpu_plugin(SY_KIND_KV_LAYOUT, layout == SY_LAYOUT_NHD ? "kv_nhd" : "kv_vectorized_5d");
}

/* docs/plugin-abi.md, kv_layout. */
static uint64_t design_offset(uint32_t layout, int is_v, uint64_t P, uint64_t H, uint64_t D, uint64_t X, uint64_t s,
                              uint64_t h, uint64_t d)
{
    uint64_t page = s / P, off = s % P;
    if (layout == SY_LAYOUT_NHD)
        return s * H * D + h * D + d;
    if (!is_v)
        return page * H * D * P + h * D * P + (d / X) * P * X + off * X + d % X;
    return page * H * D * P + h * D * P + (off / X) * D * X + d * X + off % X;
}

/* The bytes a pool of `dtype` must hold for source value x. */
static void encode(int32_t dtype, float x, float scale, uint8_t *out)
{
    if (dtype == SY_DTYPE_F32) {
        memcpy(out, &x, 4);
    } else if (dtype == SY_DTYPE_BF16) {
        uint16_t h = sy_f32_to_bf16(x);
        memcpy(out, &h, 2);
    } else {
        out[0] = sy_f32_to_fp8e4m3(x / scale);
    }
}

static const int32_t store_dtypes[3] = {SY_DTYPE_F32, SY_DTYPE_BF16, SY_DTYPE_FP8_E4M3};

/* Random K/V rows [T][H][D] at token stride `stride` (>= H*D), f32 or rounded to bf16 bits. */
typedef struct token_data {
    int64_t T, stride;
    int32_t src_dtype;
    float *k_f32, *v_f32; /* the values as f32, packed [T][H][D] */
    void *k_src, *v_src;  /* what write reads: src_dtype at `stride` */
} token_data;

static void token_data_make(sy_rng *rng, int64_t T, uint32_t H, uint32_t D, int64_t stride, int32_t src_dtype,
                            float range, token_data *t)
{
    size_t n = (size_t)T * H * D, es = sy_dtype_size(src_dtype);
    t->T = T;
    t->stride = stride;
    t->src_dtype = src_dtype;
    t->k_f32 = malloc(n * sizeof(float));
    t->v_f32 = malloc(n * sizeof(float));
    t->k_src = calloc((size_t)(T ? T : 1) * stride, es);
    t->v_src = calloc((size_t)(T ? T : 1) * stride, es);
    for (int64_t i = 0; i < T; i++)
        for (uint32_t e = 0; e < H * D; e++) {
            for (int which = 0; which < 2; which++) {
                float x = (float)sy_rng_range(rng, -range, range);
                if (src_dtype == SY_DTYPE_BF16) {
                    uint16_t h = sy_f32_to_bf16(x);
                    x = sy_bf16_to_f32(h);
                    ((uint16_t *)(which ? t->v_src : t->k_src))[i * stride + e] = h;
                } else {
                    ((float *)(which ? t->v_src : t->k_src))[i * stride + e] = x;
                }
                (which ? t->v_f32 : t->k_f32)[(size_t)i * H * D + e] = x;
            }
        }
}

static void token_data_free(token_data *t)
{
    free(t->k_f32);
    free(t->v_f32);
    free(t->k_src);
    free(t->v_src);
}

static sy_kv_write_args write_args(const sy_test_pool *pool, const token_data *t, const int32_t *slots)
{
    sy_kv_write_args a = {0};
    a.struct_size = sizeof a;
    a.geom = pool->geom;
    int64_t shape[3] = {t->T, pool->geom.kv_heads, pool->geom.head_dim}, n[1] = {t->T};
    a.k = sy_tensor_contiguous(t->k_src, t->src_dtype, 3, shape);
    a.v = sy_tensor_contiguous(t->v_src, t->src_dtype, 3, shape);
    a.k.stride[0] = a.v.stride[0] = t->stride;
    a.slots = sy_tensor_contiguous((void *)slots, SY_DTYPE_I32, 1, n);
    a.k_cache = pool->k;
    a.v_cache = pool->v;
    a.k_scale = pool->k_scale;
    a.v_scale = pool->v_scale;
    return a;
}

static void write_checked(const sy_plugin_desc *kv, const sy_kv_write_args *a, const int32_t *slots,
                          const int32_t *slot_map)
{
    sy_error err = {{0}};
    ck_assert_msg(sy_check_kv_write(a, slots, slot_map, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(sy_check_kv_write_caps(kv, a, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(((const sy_kv_layout_ops *)kv->ops)->write(NULL, NULL, a, &err) == SY_OK, "%s", err.msg);
}

/* gather of `slots` (optionally through slot_map) into fresh, poisoned buffers. */
static void gather_checked(const sy_plugin_desc *kv, const sy_test_pool *pool, const int32_t *slots, int64_t T,
                           const sy_tensor *slot_map, void *k_out, void *v_out)
{
    sy_kv_gather_args g = {0};
    g.struct_size = sizeof g;
    g.geom = pool->geom;
    int64_t n[1] = {T}, shape[3] = {T, pool->geom.kv_heads, pool->geom.head_dim};
    g.slots = sy_tensor_contiguous((void *)slots, SY_DTYPE_I32, 1, n);
    if (slot_map)
        g.slot_map = *slot_map;
    g.k_cache = pool->k;
    g.v_cache = pool->v;
    g.k_out = sy_tensor_contiguous(k_out, pool->geom.store_dtype, 3, shape);
    g.v_out = sy_tensor_contiguous(v_out, pool->geom.store_dtype, 3, shape);
    size_t bytes = (size_t)T * pool->geom.kv_heads * pool->geom.head_dim * sy_dtype_size(pool->geom.store_dtype);
    sy_poison_bytes(k_out, bytes);
    sy_poison_bytes(v_out, bytes);
    sy_error err = {{0}};
    ck_assert_msg(sy_check_kv_gather(&g, slots, slot_map ? slot_map->data : NULL, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(sy_check_kv_gather_caps(kv, &g, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(((const sy_kv_layout_ops *)kv->ops)->gather(NULL, NULL, &g, &err) == SY_OK, "%s", err.msg);
}

static void make_pool(uint32_t layout, int32_t dtype, uint32_t pages, uint32_t P, uint32_t H, uint32_t D,
                      sy_test_pool *pool)
{
    sy_error err = {{0}};
    ck_assert_msg(sy_test_pool_create(kv_plugin(layout), dtype, pages, P, H, D, pool, &err) == SY_OK, "%s", err.msg);
}

/* ---- geometry and descriptors ------------------------------------------------------------- */

START_TEST(geometry_enforces_the_vector_rule)
{
    const sy_kv_layout_ops *ops5 = kv_plugin(SY_LAYOUT_VECTORIZED_5D)->ops, *opsn = kv_plugin(SY_LAYOUT_NHD)->ops;
    struct {
        uint32_t layout;
        int32_t dtype;
        uint32_t P, D, vec;
        sy_status want;
    } cases[] = {
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 24, 40, 8, SY_OK},
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 20, 40, 0, SY_E_INVALID},     /* P % 8 */
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 24, 36, 0, SY_E_INVALID},     /* D % 8 */
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, 48, 80, 16, SY_OK},
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, 24, 80, 0, SY_E_INVALID}, /* P % 16: fine for bf16 */
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, 48, 40, 0, SY_E_INVALID}, /* D % 16 */
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_F32, 12, 20, 4, SY_OK},
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_F16, 24, 40, 0, SY_E_UNSUPPORTED},
        {SY_LAYOUT_NHD, SY_DTYPE_BF16, 7, 5, 1, SY_OK},
        {SY_LAYOUT_NHD, SY_DTYPE_FP8_E4M3, 13, 3, 1, SY_OK},
        {SY_LAYOUT_NHD, SY_DTYPE_I32, 16, 64, 0, SY_E_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sy_kv_geometry g = {sizeof g, cases[i].layout, cases[i].dtype, 9, cases[i].P, 3, cases[i].D, 0, 0, 0};
        sy_error err = {{0}};
        const sy_kv_layout_ops *ops = cases[i].layout == SY_LAYOUT_NHD ? opsn : ops5;
        sy_status st = ops->geometry(&g, &err);
        ck_assert_msg(st == cases[i].want, "case %zu: status %d, want %d (%s)", i, st, cases[i].want, err.msg);
        if (st == SY_OK) {
            ck_assert_uint_eq(g.vec, cases[i].vec);
            ck_assert_uint_eq(g.k_elems, 9ull * cases[i].P * 3 * cases[i].D);
            ck_assert_uint_eq(g.v_elems, g.k_elems);
        } else {
            ck_assert_msg(strstr(err.msg, "geometry") != NULL, "message names the op: %s", err.msg);
        }
    }
    /* A geometry of the other layout is refused, not silently served. */
    sy_kv_geometry g = {sizeof g, SY_LAYOUT_NHD, SY_DTYPE_BF16, 9, 64, 3, 64, 0, 0, 0};
    sy_error err = {{0}};
    ck_assert_int_eq(ops5->geometry(&g, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "nhd"));
}
END_TEST

START_TEST(descriptors_and_caps)
{
    const sy_plugin_desc *n = kv_plugin(SY_LAYOUT_NHD), *v = kv_plugin(SY_LAYOUT_VECTORIZED_5D);
    const sy_kv_layout_caps *nc = n->caps, *vc = v->caps;
    ck_assert_str_eq(n->backend, "cpu");
    ck_assert_str_eq(v->backend, "cpu");
    ck_assert_uint_eq(nc->layout, SY_LAYOUT_NHD);
    ck_assert_uint_eq(vc->layout, SY_LAYOUT_VECTORIZED_5D);
    ck_assert_uint_eq(vc->vector_bytes, 16);
    ck_assert_uint_eq(vc->default_page_size, 64);
    ck_assert_uint_eq(nc->vector_bytes, 0);
    ck_assert_uint_eq(nc->default_page_size, 16);
    uint32_t want = SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3) | SY_DTYPE_BIT(SY_DTYPE_F32);
    ck_assert_uint_eq(nc->store_dtypes & want, want);
    ck_assert_uint_eq(vc->store_dtypes & want, want);
    uint32_t feats = SY_KV_FEAT_SLOT_MAP | SY_KV_FEAT_FP8_SCALES | SY_KV_FEAT_ANY_TOKEN_STRIDE;
    ck_assert_uint_eq(nc->features & feats, feats);
    ck_assert_uint_eq(vc->features & feats, feats);
}
END_TEST

/* ---- addressing ---------------------------------------------------------------------------- */

/* Writes every slot of the pool (page 0 included) in a shuffled order and checks the bytes at the
 * formula's offset of every (slot, head, dim), K and V. Values are random, so a wrong permutation
 * fails almost everywhere; with the f32 store they are also all distinct. */
static void check_offsets(uint32_t layout, int32_t dtype, uint32_t P, uint32_t D)
{
    sy_rng rng = {sy_test_seed()};
    const uint32_t H = 3, pages = 4, es = (uint32_t)sy_dtype_size(dtype);
    sy_test_pool pool;
    make_pool(layout, dtype, pages, P, H, D, &pool);
    pool.k_scale = 0.03f;
    pool.v_scale = 0.011f;
    int64_t T = (int64_t)pages * P;
    int32_t *slots = malloc((size_t)T * sizeof *slots);
    for (int64_t i = 0; i < T; i++)
        slots[i] = (int32_t)i;
    for (int64_t i = T - 1; i > 0; i--) {
        int64_t j = sy_rng_below(&rng, (uint32_t)i + 1);
        int32_t t = slots[i];
        slots[i] = slots[j];
        slots[j] = t;
    }
    token_data t;
    token_data_make(&rng, T, H, D, (int64_t)H * D + 5, SY_DTYPE_F32, 4.0f, &t);
    sy_kv_write_args a = write_args(&pool, &t, slots);
    write_checked(kv_plugin(layout), &a, slots, NULL);
    uint32_t X = layout == SY_LAYOUT_NHD ? 1 : 16 / es;
    for (int64_t i = 0; i < T; i++)
        for (uint32_t h = 0; h < H; h++)
            for (uint32_t d = 0; d < D; d++)
                for (int is_v = 0; is_v < 2; is_v++) {
                    uint64_t off = design_offset(layout, is_v, P, H, D, X, (uint64_t)slots[i], h, d);
                    ck_assert_uint_lt(off * es, pool.bytes);
                    uint8_t want[4];
                    float x = (is_v ? t.v_f32 : t.k_f32)[((size_t)i * H + h) * D + d];
                    encode(dtype, x, is_v ? pool.v_scale : pool.k_scale, want);
                    const uint8_t *got = (const uint8_t *)(is_v ? pool.v : pool.k) + off * es;
                    ck_assert_msg(memcmp(got, want, es) == 0, "%s %s slot %d head %u dim %u: byte offset %llu",
                                  layout == SY_LAYOUT_NHD ? "nhd" : "vectorized_5d", is_v ? "V" : "K", slots[i], h, d,
                                  (unsigned long long)(off * es));
                }
    token_data_free(&t);
    free(slots);
    sy_test_pool_free(&pool);
}

START_TEST(vectorized_5d_offsets_match_design)
{
    /* X = 4, 8, 16; page sizes and head dims multiples of X but not powers of two. */
    check_offsets(SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_F32, 12, 20);
    check_offsets(SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 24, 40);
    check_offsets(SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, 48, 80);
}
END_TEST

START_TEST(nhd_offsets_match_design)
{
    check_offsets(SY_LAYOUT_NHD, SY_DTYPE_F32, 7, 5);
    check_offsets(SY_LAYOUT_NHD, SY_DTYPE_BF16, 13, 24);
    check_offsets(SY_LAYOUT_NHD, SY_DTYPE_FP8_E4M3, 5, 48);
}
END_TEST

/* ---- write / gather ------------------------------------------------------------------------ */

/* Random distinct slots for T tokens in pages 1.., a few replaced by -1 (skipped). */
static int32_t *random_slots(sy_rng *rng, int64_t T, uint32_t pages, uint32_t P, int with_skips)
{
    int64_t n = (int64_t)(pages - 1) * P;
    int32_t *all = malloc((size_t)n * sizeof *all), *slots = malloc((size_t)T * sizeof *slots);
    for (int64_t i = 0; i < n; i++)
        all[i] = (int32_t)(P + i);
    for (int64_t i = 0; i < T; i++) {
        int64_t j = i + sy_rng_below(rng, (uint32_t)(n - i));
        int32_t x = all[i];
        all[i] = all[j];
        all[j] = x;
        slots[i] = all[i];
        if (with_skips && i % 7 == 3)
            slots[i] = -1 - (int32_t)sy_rng_below(rng, 5);
    }
    free(all);
    return slots;
}

static void check_round_trip(uint32_t layout, int32_t dtype, int32_t src_dtype)
{
    sy_rng rng = {sy_test_seed()};
    const uint32_t es = (uint32_t)sy_dtype_size(dtype), X = layout == SY_LAYOUT_NHD ? 1 : 16 / es;
    const uint32_t H = 3, D = layout == SY_LAYOUT_NHD ? 36 : 3 * X * (X == 16 ? 1 : 2), P = layout == SY_LAYOUT_NHD ? 11 : 3 * X;
    const uint32_t pages = 7;
    const int64_t T = 29;
    sy_test_pool pool;
    make_pool(layout, dtype, pages, P, H, D, &pool);
    if (dtype == SY_DTYPE_FP8_E4M3) {
        pool.k_scale = (float)sy_rng_range(&rng, 0.01, 0.03);
        pool.v_scale = (float)sy_rng_range(&rng, 0.01, 0.03);
    }
    uint8_t *k_before = malloc(pool.bytes), *v_before = malloc(pool.bytes);
    memcpy(k_before, pool.k, pool.bytes);
    memcpy(v_before, pool.v, pool.bytes);
    int32_t *slots = random_slots(&rng, T, pages, P, 1);
    token_data t;
    token_data_make(&rng, T, H, D, (int64_t)H * D + 3, src_dtype, 4.0f, &t);
    size_t src_bytes = (size_t)T * t.stride * sy_dtype_size(src_dtype);
    void *k_copy = malloc(src_bytes), *v_copy = malloc(src_bytes);
    memcpy(k_copy, t.k_src, src_bytes);
    memcpy(v_copy, t.v_src, src_bytes);
    sy_kv_write_args a = write_args(&pool, &t, slots);
    write_checked(kv_plugin(layout), &a, slots, NULL);
    ck_assert_msg(memcmp(k_copy, t.k_src, src_bytes) == 0 && memcmp(v_copy, t.v_src, src_bytes) == 0,
                  "write modified its input");

    /* Gather the written tokens: exactly the encoded inputs. */
    int32_t *kept = malloc((size_t)T * sizeof *kept);
    int64_t *row_of = malloc((size_t)T * sizeof *row_of), n = 0;
    for (int64_t i = 0; i < T; i++)
        if (slots[i] >= 0) {
            kept[n] = slots[i];
            row_of[n++] = i;
        }
    size_t row_bytes = (size_t)H * D * es;
    uint8_t *k_out = malloc((size_t)n * row_bytes), *v_out = malloc((size_t)n * row_bytes);
    gather_checked(kv_plugin(layout), &pool, kept, n, NULL, k_out, v_out);
    for (int64_t r = 0; r < n; r++)
        for (uint32_t e = 0; e < H * D; e++) {
            uint8_t wk[4], wv[4];
            encode(dtype, t.k_f32[(size_t)row_of[r] * H * D + e], pool.k_scale, wk);
            encode(dtype, t.v_f32[(size_t)row_of[r] * H * D + e], pool.v_scale, wv);
            ck_assert_msg(memcmp(k_out + (r * H * D + e) * es, wk, es) == 0, "K token %lld element %u",
                          (long long)row_of[r], e);
            ck_assert_msg(memcmp(v_out + (r * H * D + e) * es, wv, es) == 0, "V token %lld element %u",
                          (long long)row_of[r], e);
        }

    /* Nothing else changed: every byte outside the written slots keeps its poison. */
    uint8_t *owned = calloc(pool.bytes, 1);
    for (int64_t r = 0; r < n; r++)
        for (uint32_t h = 0; h < H; h++)
            for (uint32_t d = 0; d < D; d++)
                for (int is_v = 0; is_v < 2; is_v++) {
                    uint64_t off = design_offset(layout, is_v, P, H, D, X, (uint64_t)kept[r], h, d);
                    for (uint32_t b = 0; b < es; b++)
                        owned[off * es + b] |= (uint8_t)(1u << is_v);
                }
    for (size_t b = 0; b < pool.bytes; b++) {
        if (!(owned[b] & 1))
            ck_assert_msg(((uint8_t *)pool.k)[b] == k_before[b], "K byte %zu outside the written slots changed", b);
        if (!(owned[b] & 2))
            ck_assert_msg(((uint8_t *)pool.v)[b] == v_before[b], "V byte %zu outside the written slots changed", b);
    }

    /* The inverse the other way: the gathered rows, written again, give the same pool bytes. */
    token_data again = {n, (int64_t)H * D, dtype, NULL, NULL, NULL, NULL};
    if (dtype == SY_DTYPE_FP8_E4M3) {
        again.src_dtype = SY_DTYPE_F32;
        again.k_src = malloc((size_t)n * H * D * sizeof(float));
        again.v_src = malloc((size_t)n * H * D * sizeof(float));
        for (size_t e = 0; e < (size_t)n * H * D; e++) {
            ((float *)again.k_src)[e] = sy_fp8e4m3_to_f32(k_out[e]) * pool.k_scale;
            ((float *)again.v_src)[e] = sy_fp8e4m3_to_f32(v_out[e]) * pool.v_scale;
        }
    } else {
        again.k_src = k_out;
        again.v_src = v_out;
    }
    sy_test_pool pool2;
    make_pool(layout, dtype, pages, P, H, D, &pool2);
    pool2.k_scale = pool.k_scale;
    pool2.v_scale = pool.v_scale;
    memcpy(pool2.k, k_before, pool.bytes);
    memcpy(pool2.v, v_before, pool.bytes);
    sy_kv_write_args a2 = write_args(&pool2, &again, kept);
    write_checked(kv_plugin(layout), &a2, kept, NULL);
    ck_assert_msg(memcmp(pool2.k, pool.k, pool.bytes) == 0 && memcmp(pool2.v, pool.v, pool.bytes) == 0,
                  "write(gather(pool)) differs from pool");
    if (dtype == SY_DTYPE_FP8_E4M3) {
        free(again.k_src);
        free(again.v_src);
    }
    sy_test_pool_free(&pool2);
    free(owned);
    free(k_out);
    free(v_out);
    free(kept);
    free(row_of);
    free(k_copy);
    free(v_copy);
    free(k_before);
    free(v_before);
    free(slots);
    token_data_free(&t);
    sy_test_pool_free(&pool);
}

START_TEST(write_then_gather_is_bit_exact)
{
    const uint32_t layouts[2] = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D};
    for (int l = 0; l < 2; l++)
        for (int d = 0; d < 3; d++) {
            check_round_trip(layouts[l], store_dtypes[d], SY_DTYPE_F32);
            check_round_trip(layouts[l], store_dtypes[d], SY_DTYPE_BF16);
        }
}
END_TEST

/* f32 values x where fp8(x / scale) and fp8(x * (1 / scale)) differ: near the midpoints between
 * fp8 codes the one-ulp difference of the two quotients decides the rounding. Random values almost
 * never land there, so a writer multiplying by the reciprocal would pass the tests above. */
static size_t division_sensitive_values(float scale, float *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t c = 0; c < 0x7E && n < cap; c++) {
        float mid = (sy_fp8e4m3_to_f32((uint8_t)c) + sy_fp8e4m3_to_f32((uint8_t)(c + 1))) / 2;
        float x = nextafterf(mid * scale, 0.0f);
        for (int step = 0; step < 8 && n < cap; step++, x = nextafterf(x, INFINITY))
            for (int s = 0; s < 2 && n < cap; s++) {
                float v = s ? -x : x;
                if (sy_f32_to_fp8e4m3(v / scale) != sy_f32_to_fp8e4m3(v * (1.0f / scale)))
                    out[n++] = v;
            }
    }
    return n;
}

/* docs/plugin-abi.md, kv_layout: the fp8 store holds fp8_e4m3(x / scale), a true division, so that every writer of
 * the project (host and GPU) stores the same bits. */
START_TEST(fp8_store_divides_by_the_scale)
{
    const float k_scale = 0.011f, v_scale = 0.0137f; /* reciprocals not exact in f32 */
    const uint32_t H = 1, D = 16, P = 16, pages = 8;
    const uint32_t layouts[2] = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D};
    float kv_values[2][96];
    size_t nk = division_sensitive_values(k_scale, kv_values[0], 96);
    size_t nv = division_sensitive_values(v_scale, kv_values[1], 96);
    ck_assert_msg(nk >= 16 && nv >= 16, "only %zu / %zu values tell x / scale from x * (1 / scale)", nk, nv);
    const int64_t T = 6;
    token_data t = {T, (int64_t)H * D, SY_DTYPE_F32, NULL, NULL, NULL, NULL};
    t.k_f32 = malloc((size_t)T * H * D * sizeof(float));
    t.v_f32 = malloc((size_t)T * H * D * sizeof(float));
    for (size_t e = 0; e < (size_t)T * H * D; e++) {
        t.k_f32[e] = kv_values[0][e % nk];
        t.v_f32[e] = kv_values[1][e % nv];
    }
    t.k_src = t.k_f32;
    t.v_src = t.v_f32;
    int32_t slots[6] = {17, 40, 63, 64, 100, 127};
    for (int l = 0; l < 2; l++) {
        sy_test_pool pool;
        make_pool(layouts[l], SY_DTYPE_FP8_E4M3, pages, P, H, D, &pool);
        pool.k_scale = k_scale;
        pool.v_scale = v_scale;
        sy_kv_write_args a = write_args(&pool, &t, slots);
        write_checked(kv_plugin(layouts[l]), &a, slots, NULL);
        uint8_t k_out[6 * 16], v_out[6 * 16];
        gather_checked(kv_plugin(layouts[l]), &pool, slots, T, NULL, k_out, v_out);
        for (size_t e = 0; e < (size_t)T * H * D; e++) {
            ck_assert_msg(k_out[e] == sy_f32_to_fp8e4m3(t.k_f32[e] / k_scale),
                          "%s K element %zu: %a stored as 0x%02x, fp8(x / scale) is 0x%02x",
                          layouts[l] == SY_LAYOUT_NHD ? "nhd" : "vectorized_5d", e, (double)t.k_f32[e], k_out[e],
                          sy_f32_to_fp8e4m3(t.k_f32[e] / k_scale));
            ck_assert_msg(v_out[e] == sy_f32_to_fp8e4m3(t.v_f32[e] / v_scale),
                          "%s V element %zu: %a stored as 0x%02x, fp8(x / scale) is 0x%02x",
                          layouts[l] == SY_LAYOUT_NHD ? "nhd" : "vectorized_5d", e, (double)t.v_f32[e], v_out[e],
                          sy_f32_to_fp8e4m3(t.v_f32[e] / v_scale));
        }
        sy_test_pool_free(&pool);
    }
    free(t.k_f32);
    free(t.v_f32);
}
END_TEST

/* Full-pool slots translated to an SWA pool: negative map entries are skipped, 0 lands on the
 * padding page, the rest land where the map says, for write and gather alike. */
static void check_slot_map(uint32_t layout)
{
    sy_rng rng = {sy_test_seed()};
    const uint32_t H = 2, D = 32, P = 16, swa_pages = 5;
    const int32_t full_slots = 40 * (int32_t)P;
    sy_test_pool swa;
    make_pool(layout, SY_DTYPE_BF16, swa_pages, P, H, D, &swa);
    int32_t *map = malloc((size_t)full_slots * sizeof *map);
    for (int32_t i = 0; i < full_slots; i++)
        map[i] = -1;
    const int64_t T = 24;
    int32_t *slots = malloc(T * sizeof *slots), *expect = malloc(T * sizeof *expect);
    for (int64_t i = 0; i < T; i++) {
        slots[i] = (int32_t)(i * 23 + 5) % full_slots;
        if (i % 5 == 1)
            expect[i] = -1;                          /* freed: skipped */
        else if (i % 5 == 2)
            expect[i] = 0;                           /* freed to the padding page */
        else
            expect[i] = (int32_t)(P + (uint32_t)i);  /* distinct, outside page 0 */
        map[slots[i]] = expect[i];
    }
    token_data t;
    token_data_make(&rng, T, H, D, (int64_t)H * D, SY_DTYPE_F32, 2.0f, &t);
    sy_kv_write_args a = write_args(&swa, &t, slots);
    int64_t n[1] = {full_slots};
    a.slot_map = sy_tensor_contiguous(map, SY_DTYPE_I32, 1, n);
    uint8_t *before = malloc(swa.bytes);
    memcpy(before, swa.k, swa.bytes);
    write_checked(kv_plugin(layout), &a, slots, map);
    /* Gather through the same map, for the tokens that landed outside the padding page. */
    int32_t *kept = malloc(T * sizeof *kept);
    int64_t *row_of = malloc(T * sizeof *row_of), m = 0;
    for (int64_t i = 0; i < T; i++)
        if (expect[i] > 0) {
            kept[m] = slots[i];
            row_of[m++] = i;
        }
    uint16_t *k_out = malloc((size_t)m * H * D * 2), *v_out = malloc((size_t)m * H * D * 2);
    gather_checked(kv_plugin(layout), &swa, kept, m, &a.slot_map, k_out, v_out);
    for (int64_t r = 0; r < m; r++)
        for (uint32_t e = 0; e < H * D; e++) {
            ck_assert_uint_eq(k_out[r * H * D + e], sy_f32_to_bf16(t.k_f32[row_of[r] * H * D + e]));
            ck_assert_uint_eq(v_out[r * H * D + e], sy_f32_to_bf16(t.v_f32[row_of[r] * H * D + e]));
        }
    /* A token mapped to 0 (a freed SWA entry) landed on the padding page: slot 0 holds the last
     * such token written. */
    int64_t last_padding = -1;
    for (int64_t i = 0; i < T; i++)
        if (expect[i] == 0)
            last_padding = i;
    ck_assert_int_ge(last_padding, 0);
    int32_t padding_slot = 0;
    uint16_t pad_k[2 * 32], pad_v[2 * 32];
    gather_checked(kv_plugin(layout), &swa, &padding_slot, 1, NULL, pad_k, pad_v);
    for (uint32_t e = 0; e < H * D; e++) {
        ck_assert_uint_eq(pad_k[e], sy_f32_to_bf16(t.k_f32[last_padding * H * D + e]));
        ck_assert_uint_eq(pad_v[e], sy_f32_to_bf16(t.v_f32[last_padding * H * D + e]));
    }
    /* Skipped tokens wrote nothing: outside page 0 only the mapped slots changed. */
    uint32_t X = layout == SY_LAYOUT_NHD ? 1 : 8;
    uint8_t *owned = calloc(swa.bytes, 1);
    for (int64_t i = 0; i < T; i++)
        for (uint32_t h = 0; expect[i] >= 0 && h < H; h++)
            for (uint32_t d = 0; d < D; d++) {
                uint64_t off = design_offset(layout, 0, P, H, D, X, (uint64_t)expect[i], h, d);
                owned[2 * off] = owned[2 * off + 1] = 1;
            }
    for (size_t b = 0; b < swa.bytes; b++)
        if (!owned[b])
            ck_assert_msg(((uint8_t *)swa.k)[b] == before[b], "K byte %zu changed by a skipped token", b);
    free(owned);
    free(before);
    free(k_out);
    free(v_out);
    free(kept);
    free(row_of);
    free(slots);
    free(expect);
    free(map);
    token_data_free(&t);
    sy_test_pool_free(&swa);
}

START_TEST(slot_map_translates_full_to_swa)
{
    check_slot_map(SY_LAYOUT_NHD);
    check_slot_map(SY_LAYOUT_VECTORIZED_5D);
}
END_TEST

/* ---- call-boundary checks ------------------------------------------------------------------- */

static void expect_rejected(sy_status st, const sy_error *err, const char *needle)
{
    ck_assert_msg(st != SY_OK, "accepted; expected an error mentioning '%s'", needle);
    ck_assert_msg(strstr(err->msg, needle) != NULL, "message '%s' does not mention '%s'", err->msg, needle);
    ck_assert_msg(strchr(err->msg, '\n') == NULL, "message is not one line: %s", err->msg);
}

START_TEST(write_and_gather_checks_reject_bad_indices)
{
    sy_rng rng = {sy_test_seed()};
    const uint32_t H = 2, D = 16, P = 16, pages = 3;
    sy_test_pool pool;
    make_pool(SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, pages, P, H, D, &pool);
    const int64_t T = 4;
    int32_t slots[4] = {17, 3, -1, 40};
    token_data t;
    token_data_make(&rng, T, H, D, (int64_t)H * D, SY_DTYPE_F32, 1.0f, &t);
    sy_error err = {{0}};
    sy_kv_write_args a = write_args(&pool, &t, slots);
    ck_assert_msg(sy_check_kv_write(&a, slots, NULL, &err) == SY_OK, "%s", err.msg);

    slots[1] = (int32_t)(pages * P); /* one past the pool */
    expect_rejected(sy_check_kv_write(&a, slots, NULL, &err), &err, "slots[1] = 48");
    /* The plugin itself refuses it too, and writes nothing. */
    uint8_t *before = malloc(pool.bytes);
    memcpy(before, pool.k, pool.bytes);
    expect_rejected(((const sy_kv_layout_ops *)kv_plugin(SY_LAYOUT_VECTORIZED_5D)->ops)->write(NULL, NULL, &a, &err),
                    &err, "outside the pool");
    ck_assert_msg(memcmp(before, pool.k, pool.bytes) == 0, "a rejected write changed the pool");
    slots[1] = 3;

    int32_t map[20];
    for (int i = 0; i < 20; i++)
        map[i] = i;
    int64_t n20[1] = {20};
    a.slot_map = sy_tensor_contiguous(map, SY_DTYPE_I32, 1, n20);
    expect_rejected(sy_check_kv_write(&a, slots, map, &err), &err, "outside slot_map");  /* slots[3] = 40 >= 20 */
    slots[3] = 19;
    map[19] = 1000;
    expect_rejected(sy_check_kv_write(&a, slots, map, &err), &err, "slot_map[19] = 1000");
    map[19] = -1; /* freed: skipped */
    ck_assert_msg(sy_check_kv_write(&a, slots, map, &err) == SY_OK, "%s", err.msg);
    expect_rejected(sy_check_kv_write(&a, slots, NULL, &err), &err, "host copy of slot_map");
    a.slot_map = (sy_tensor){0};

    a.slots.dtype = SY_DTYPE_I64;
    expect_rejected(sy_check_kv_write(&a, slots, NULL, &err), &err, "int32");
    a.slots.dtype = SY_DTYPE_I32;
    a.k_scale = 0.0f;
    expect_rejected(sy_check_kv_write(&a, slots, NULL, &err), &err, "k_scale");
    a.k_scale = 1.0f;
    a.v.shape[2] = D + 1;
    expect_rejected(sy_check_kv_write(&a, slots, NULL, &err), &err, "v has shape");
    a.v.shape[2] = D;
    a.k.shape[1] = H + 1;
    expect_rejected(sy_check_kv_write(&a, slots, NULL, &err), &err, "k has shape");
    a.k.shape[1] = H;
    /* The caps: an nhd plugin is not asked to write a vectorized_5d geometry. */
    expect_rejected(sy_check_kv_write_caps(kv_plugin(SY_LAYOUT_NHD), &a, &err), &err, "layout");

    /* Gather reads every slot: a negative one is an error there. */
    sy_kv_gather_args g = {0};
    g.struct_size = sizeof g;
    g.geom = pool.geom;
    int32_t gslots[2] = {17, -1};
    int64_t n2[1] = {2}, shape[3] = {2, H, D};
    uint8_t out_k[2 * 2 * 16], out_v[2 * 2 * 16];
    g.slots = sy_tensor_contiguous(gslots, SY_DTYPE_I32, 1, n2);
    g.k_cache = pool.k;
    g.v_cache = pool.v;
    g.k_out = sy_tensor_contiguous(out_k, SY_DTYPE_FP8_E4M3, 3, shape);
    g.v_out = sy_tensor_contiguous(out_v, SY_DTYPE_FP8_E4M3, 3, shape);
    expect_rejected(sy_check_kv_gather(&g, gslots, NULL, &err), &err, "slots[1] = -1");
    gslots[1] = 48;
    expect_rejected(sy_check_kv_gather(&g, gslots, NULL, &err), &err, "outside the pool");
    gslots[1] = 47;
    ck_assert_msg(sy_check_kv_gather(&g, gslots, NULL, &err) == SY_OK, "%s", err.msg);
    g.k_out.dtype = SY_DTYPE_BF16;
    expect_rejected(sy_check_kv_gather(&g, gslots, NULL, &err), &err, "store dtype");
    free(before);
    token_data_free(&t);
    sy_test_pool_free(&pool);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kv_layout");
    TCase *tc = tcase_create("kv_layout");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, geometry_enforces_the_vector_rule);
    tcase_add_test(tc, descriptors_and_caps);
    tcase_add_test(tc, vectorized_5d_offsets_match_design);
    tcase_add_test(tc, nhd_offsets_match_design);
    tcase_add_test(tc, write_then_gather_is_bit_exact);
    tcase_add_test(tc, fp8_store_divides_by_the_scale);
    tcase_add_test(tc, slot_map_translates_full_to_swa);
    tcase_add_test(tc, write_and_gather_checks_reject_bad_indices);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
