/* The kv_layout ops on the GPU for every layout sy_kv_addr.h addresses, the layout a template
 * parameter: kv_nhd and kv_vectorized_5d instantiate the same kernels (SY_KV_GPU_DEFINE_OPS), and
 * rope_yarn's fused rope + KV write stores its rotated keys through sy_kv_gpu_store_k_run and its
 * values through sy_kv_gpu_write_v_units, so that it equals kv_layout.write bit for bit.
 *
 * Work split. A block owns a group of consecutive tokens and a range of heads; its threads walk
 * units of 16 bytes of the store:
 *   K (both layouts) and nhd V: a unit is one chunk of 16 / store bytes consecutive dims of one
 *   token's row (for vectorized_5d exactly one X-vector), loaded from the [T, H, D] source with
 *   16-byte loads when its pointer and strides allow and stored with one 16-byte store.
 *   vectorized_5d V: a 16-byte vector holds X consecutive slots of one dim. The group is X tokens;
 *   when their slots are such a run (prefill into a sequence's pages) a unit is one (head, dim) and
 *   writes one vector; otherwise (decode: one token per sequence) each element is stored alone.
 * Store rule (kv_store_cpu.h): f32 and bf16 pools round to nearest even, fp8 pools hold
 * fp8_e4m3(x / scale) with a true division. Slots below 0, before or after the slot map, are
 * skipped; so is a slot outside the pool, which the engine's call checks reject before the call
 * (device code cannot report it). gather writes zeros for such a slot.
 *
 * Ops enqueue on the caller's stream and never synchronize. */
#ifndef SY_KV_STORE_GPU_CUH
#define SY_KV_STORE_GPU_CUH

#include "gpu_runtime.h"
#include "sy_elem_gpu.cuh"
#include "sy_kv_addr.h"

extern "C" {
#include "kv_store_cpu.h"
#include "sy_op_check.h"
}

enum {
    SY_KV_GPU_THREADS = 128,  /* a multiple of both warp widths */
    SY_KV_GPU_MAX_GROUP = 16, /* tokens per block: X of fp8 vectorized_5d */
    SY_KV_GPU_UNITS = 128     /* K units a block aims at */
};

/* Token t's pool slot through the optional slot map, or -1 (skip / no such slot). */
typedef struct sy_kv_gpu_index {
    const int32_t *slots;
    int64_t slots_stride;
    const int32_t *slot_map; /* NULL: none */
    int64_t map_len, map_stride;
    int64_t tokens;
    int64_t pool_slots;
} sy_kv_gpu_index;

typedef struct sy_kv_gpu_pool {
    sy_kv_dims dims;
    void *k, *v;
    float k_scale, v_scale; /* fp8 stores only */
    int32_t row_aligned;    /* nhd: rows start on 16 bytes (D * store bytes % 16 == 0); 5d: always */
} sy_kv_gpu_pool;

/* [T, H, D] tensors on the other side of the pool (write sources, gather destinations). */
typedef struct sy_kv_gpu_rows {
    void *k, *v;
    int64_t k_s0, k_s1, v_s0, v_s1;
    int32_t dtype;
    int32_t k_vec, v_vec; /* 16-byte aligned pointer and strides */
} sy_kv_gpu_rows;

/* The block's token group and head range. */
typedef struct sy_kv_gpu_block {
    int64_t t0;
    uint32_t tokens; /* in the group, those past T included (their slot is -1) */
    uint32_t h0, heads;
} sy_kv_gpu_block;

SY_DEV int64_t sy_kv_gpu_slot(const sy_kv_gpu_index &ix, int64_t t)
{
    if (t >= ix.tokens)
        return -1;
    int64_t s = ix.slots[t * ix.slots_stride];
    if (s < 0)
        return -1;
    if (ix.slot_map) {
        if (s >= ix.map_len)
            return -1;
        s = ix.slot_map[s * ix.map_stride];
        if (s < 0)
            return -1;
    }
    return s < ix.pool_slots ? s : -1;
}

/* Fills slot_s[0 .. blk.tokens) and *run_s: 1 when the group's slots are X consecutive slots
 * starting on a multiple of X (then they share one page and one 16-byte V vector per dim). Every
 * thread of the block must call it (it ends with a barrier). */
SY_DEV void sy_kv_gpu_block_slots(const sy_kv_gpu_index &ix, const sy_kv_gpu_block &blk, uint32_t vec,
                                  int64_t *slot_s, int *run_s)
{
    if (threadIdx.x < blk.tokens)
        slot_s[threadIdx.x] = sy_kv_gpu_slot(ix, blk.t0 + threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) {
        int run = blk.tokens == vec && slot_s[0] >= 0 && slot_s[0] % vec == 0;
        for (uint32_t j = 1; j < blk.tokens && run; j++)
            run = slot_s[j] == slot_s[0] + j;
        *run_s = run;
    }
    __syncthreads();
}

/* Element d of a row of the layout, as sy_kv_row_elem computes it, with the run length known at
 * compile time: vectorized_5d K rows are runs of X = 16 / store bytes elements, V rows have an
 * element stride of X, nhd rows are D contiguous elements. */
template <int LAYOUT, int STORE>
SY_DEV uint64_t sy_kv_gpu_k_elem(const sy_kv_row &row, uint32_t d)
{
    constexpr uint32_t X = sy_elems16<STORE>;
    if constexpr (LAYOUT == SY_LAYOUT_VECTORIZED_5D)
        return row.base + (uint64_t)(d / X) * row.run_stride + d % X;
    else
        return row.base + d;
}

template <int LAYOUT, int STORE>
SY_DEV uint64_t sy_kv_gpu_v_elem(const sy_kv_row &row, uint32_t d)
{
    if constexpr (LAYOUT == SY_LAYOUT_VECTORIZED_5D)
        return row.base + (uint64_t)d * sy_elems16<STORE>;
    else
        return row.base + d;
}

SY_DEV sy_kv_row sy_kv_gpu_k_row(const sy_kv_dims &g, int64_t slot, uint32_t h)
{
    return sy_kv_k_row_at(&g, (uint32_t)slot / g.page_size, (uint32_t)slot % g.page_size, h);
}

SY_DEV sy_kv_row sy_kv_gpu_v_row(const sy_kv_dims &g, int64_t slot, uint32_t h)
{
    return sy_kv_v_row_at(&g, (uint32_t)slot / g.page_size, (uint32_t)slot % g.page_size, h);
}

/* Stores x[0 .. n) as dims d0 .. d0 + n - 1 of the K row of (slot, h). One 16-byte store per
 * X-aligned run of X elements, element stores otherwise. */
template <int LAYOUT, int STORE, int N>
SY_DEV void sy_kv_gpu_store_k_run(const sy_kv_gpu_pool &pool, int64_t slot, uint32_t h, uint32_t d0, const float *x,
                                  int n)
{
    constexpr int ES = sy_elem_size<STORE>, PER = sy_elems16<STORE>;
    const sy_kv_row row = sy_kv_gpu_k_row(pool.dims, slot, h);
    if constexpr (N % PER == 0) {
        if (n == N && d0 % PER == 0 && pool.row_aligned) {
#pragma unroll
            for (int piece = 0; piece < N / PER; piece++)
                sy_st_raw<16>((char *)pool.k + sy_kv_gpu_k_elem<LAYOUT, STORE>(row, d0 + piece * PER) * ES,
                              sy_pack<STORE>(x + piece * PER, pool.k_scale));
            return;
        }
    }
#pragma unroll
    for (int e = 0; e < N; e++)
        if (e < n)
            sy_st_elem_raw<STORE>(pool.k, sy_kv_gpu_k_elem<LAYOUT, STORE>(row, d0 + e),
                                  sy_gpu_encode<STORE>(x[e], pool.k_scale));
}

/* The same for a V row of nhd (contiguous like K). vectorized_5d V goes through
 * sy_kv_gpu_write_v_units. */
template <int STORE, int N>
SY_DEV void sy_kv_gpu_store_nhd_v_run(const sy_kv_gpu_pool &pool, int64_t slot, uint32_t h, uint32_t d0,
                                      const float *x, int n)
{
    sy_kv_gpu_pool as_k = pool;
    as_k.k = pool.v;
    as_k.k_scale = pool.v_scale;
    sy_kv_gpu_store_k_run<SY_LAYOUT_NHD, STORE, N>(as_k, slot, h, d0, x, n);
}

/* Units of K (or of nhd V, `value` = 1) of the block: chunks of 16 / store bytes dims of one
 * token's row, loaded from `src` (the [T, H, D] sources) and stored. Unit order puts the dims of one
 * row next to each other for nhd (contiguous in source and pool) and the tokens of one chunk next
 * to each other for vectorized_5d (contiguous X-vectors in the pool). */
template <int LAYOUT, int STORE>
SY_DEV void sy_kv_gpu_write_rows(const sy_kv_gpu_pool &pool, const sy_kv_gpu_rows &src, const sy_kv_gpu_block &blk,
                                 const int64_t *slot_s, bool value)
{
    constexpr uint32_t PER = sy_elems16<STORE>;
    const uint32_t D = pool.dims.head_dim, chunks = (D + PER - 1) / PER;
    const uint32_t units = blk.tokens * blk.heads * chunks;
    const void *base = value ? src.v : src.k;
    const int64_t s0 = value ? src.v_s0 : src.k_s0, s1 = value ? src.v_s1 : src.k_s1;
    const bool vec = value ? src.v_vec : src.k_vec;
    for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) {
        uint32_t j, c, hh;
        if constexpr (LAYOUT == SY_LAYOUT_VECTORIZED_5D) {
            j = u % blk.tokens;
            c = u / blk.tokens % chunks;
            hh = u / (blk.tokens * chunks);
        } else {
            c = u % chunks;
            hh = u / chunks % blk.heads;
            j = u / (chunks * blk.heads);
        }
        const int64_t slot = slot_s[j];
        if (slot < 0)
            continue;
        const uint32_t h = blk.h0 + hh, d0 = c * PER;
        const int n = (int)(D - d0 < PER ? D - d0 : PER);
        float x[PER];
        sy_gpu_load_act_run<PER>(base, src.dtype, (blk.t0 + j) * s0 + (int64_t)h * s1 + d0, n, vec, x);
        if (value)
            sy_kv_gpu_store_nhd_v_run<STORE, PER>(pool, slot, h, d0, x, n);
        else
            sy_kv_gpu_store_k_run<LAYOUT, STORE, PER>(pool, slot, h, d0, x, n);
    }
}

/* The block's V. nhd: rows like K. vectorized_5d: with a run of X slots, one unit per (head, dim)
 * gathers the X tokens' values of that dim and stores their vector; otherwise one unit per element. */
template <int LAYOUT, int STORE>
SY_DEV void sy_kv_gpu_write_v_units(const sy_kv_gpu_pool &pool, const sy_kv_gpu_rows &src,
                                    const sy_kv_gpu_block &blk, const int64_t *slot_s, int run)
{
    if constexpr (LAYOUT != SY_LAYOUT_VECTORIZED_5D) {
        (void)run;
        sy_kv_gpu_write_rows<LAYOUT, STORE>(pool, src, blk, slot_s, true);
    } else {
        constexpr int ES = sy_elem_size<STORE>, X = sy_elems16<STORE>;
        const uint32_t D = pool.dims.head_dim;
        if (run) {
            const uint32_t units = blk.heads * D;
            for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) {
                const uint32_t d = u % D, h = blk.h0 + u / D;
                float x[X];
#pragma unroll
                for (int j = 0; j < X; j++)
                    x[j] = sy_gpu_load_act(src.v, src.dtype, (blk.t0 + j) * src.v_s0 + (int64_t)h * src.v_s1 + d);
                const sy_kv_row row = sy_kv_gpu_v_row(pool.dims, slot_s[0], h);
                sy_st_raw<16>((char *)pool.v + sy_kv_gpu_v_elem<LAYOUT, STORE>(row, d) * ES, sy_pack<STORE>(x, pool.v_scale));
            }
            return;
        }
        const uint32_t units = blk.tokens * blk.heads * D;
        for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) {
            const uint32_t d = u % D, hh = u / D % blk.heads, j = u / (D * blk.heads);
            const int64_t slot = slot_s[j];
            if (slot < 0)
                continue;
            const uint32_t h = blk.h0 + hh;
            const float x = sy_gpu_load_act(src.v, src.dtype, (blk.t0 + j) * src.v_s0 + (int64_t)h * src.v_s1 + d);
            const sy_kv_row row = sy_kv_gpu_v_row(pool.dims, slot, h);
            sy_st_elem_raw<STORE>(pool.v, sy_kv_gpu_v_elem<LAYOUT, STORE>(row, d), sy_gpu_encode<STORE>(x, pool.v_scale));
        }
    }
}

SY_DEV sy_kv_gpu_block sy_kv_gpu_this_block(uint32_t group, uint32_t heads_per_block, uint32_t kv_heads)
{
    sy_kv_gpu_block blk;
    blk.t0 = (int64_t)blockIdx.x * group;
    blk.tokens = group;
    blk.h0 = blockIdx.y * heads_per_block;
    blk.heads = kv_heads - blk.h0 < heads_per_block ? kv_heads - blk.h0 : heads_per_block;
    return blk;
}

template <int LAYOUT, int STORE>
static __global__ __launch_bounds__(SY_KV_GPU_THREADS) void sy_kv_gpu_write_kernel(
    const sy_kv_gpu_pool pool, const sy_kv_gpu_rows src, const sy_kv_gpu_index ix, uint32_t group,
    uint32_t heads_per_block)
{
    __shared__ int64_t slot_s[SY_KV_GPU_MAX_GROUP];
    __shared__ int run_s;
    const sy_kv_gpu_block blk = sy_kv_gpu_this_block(group, heads_per_block, pool.dims.kv_heads);
    sy_kv_gpu_block_slots(ix, blk, pool.dims.vec, slot_s, &run_s);
    sy_kv_gpu_write_rows<LAYOUT, STORE>(pool, src, blk, slot_s, false);
    sy_kv_gpu_write_v_units<LAYOUT, STORE>(pool, src, blk, slot_s, run_s);
}

/* gather: the same units read back, bit for bit, into contiguous [T, H, D] rows of the store dtype. */
template <int LAYOUT, int STORE>
static __global__ __launch_bounds__(SY_KV_GPU_THREADS) void sy_kv_gpu_gather_kernel(
    const sy_kv_gpu_pool pool, const sy_kv_gpu_rows dst, const sy_kv_gpu_index ix, uint32_t group,
    uint32_t heads_per_block)
{
    constexpr int ES = sy_elem_size<STORE>;
    constexpr uint32_t PER = sy_elems16<STORE>;
    __shared__ int64_t slot_s[SY_KV_GPU_MAX_GROUP];
    __shared__ int run_s;
    const sy_kv_gpu_block blk = sy_kv_gpu_this_block(group, heads_per_block, pool.dims.kv_heads);
    sy_kv_gpu_block_slots(ix, blk, pool.dims.vec, slot_s, &run_s);
    const uint32_t D = pool.dims.head_dim, H = pool.dims.kv_heads, chunks = (D + PER - 1) / PER;
    const uint32_t row_units = blk.tokens * blk.heads * chunks;
    /* K rows, and nhd V rows: chunk by chunk. */
    const int tensors = LAYOUT == SY_LAYOUT_VECTORIZED_5D ? 1 : 2;
    for (int tensor = 0; tensor < tensors; tensor++) {
        const void *cache = tensor ? pool.v : pool.k;
        char *out = (char *)(tensor ? dst.v : dst.k);
        for (uint32_t u = threadIdx.x; u < row_units; u += blockDim.x) {
            const uint32_t c = u % chunks, hh = u / chunks % blk.heads, j = u / (chunks * blk.heads);
            const int64_t t = blk.t0 + j, slot = slot_s[j];
            if (t >= ix.tokens)
                continue;
            const uint32_t h = blk.h0 + hh, d0 = c * PER;
            const int n = (int)(D - d0 < PER ? D - d0 : PER);
            const uint64_t o = ((uint64_t)t * H + h) * D + d0;
            uint4 raw = make_uint4(0u, 0u, 0u, 0u);
            if (slot >= 0) {
                const sy_kv_row row = tensor ? sy_kv_gpu_v_row(pool.dims, slot, h) : sy_kv_gpu_k_row(pool.dims, slot, h);
                const uint64_t e = sy_kv_gpu_k_elem<LAYOUT, STORE>(row, d0);
                raw = n == (int)PER && pool.row_aligned ? sy_ld_raw<16>((const char *)cache + e * ES)
                                                        : sy_ld_elems_raw<STORE>(cache, e, n);
            }
            if (n == (int)PER && pool.row_aligned)
                sy_st_raw<16>(out + o * ES, raw);
            else
                for (int i = 0; i < n; i++)
                    sy_st_elem_raw<STORE>(out, o + i, sy_raw_at<STORE>(raw, i));
        }
    }
    if constexpr (LAYOUT == SY_LAYOUT_VECTORIZED_5D) {
        constexpr int X = PER;
        char *out = (char *)dst.v;
        if (run_s) {
            for (uint32_t u = threadIdx.x; u < blk.heads * D; u += blockDim.x) {
                const uint32_t d = u % D, h = blk.h0 + u / D;
                const sy_kv_row row = sy_kv_gpu_v_row(pool.dims, slot_s[0], h);
                const uint4 raw = sy_ld_raw<16>((const char *)pool.v + sy_kv_gpu_v_elem<LAYOUT, STORE>(row, d) * ES);
#pragma unroll
                for (int j = 0; j < X; j++)
                    sy_st_elem_raw<STORE>(out, ((uint64_t)(blk.t0 + j) * H + h) * D + d, sy_raw_at<STORE>(raw, j));
            }
        } else {
            for (uint32_t u = threadIdx.x; u < blk.tokens * blk.heads * D; u += blockDim.x) {
                const uint32_t d = u % D, hh = u / D % blk.heads, j = u / (D * blk.heads);
                const int64_t t = blk.t0 + j, slot = slot_s[j];
                if (t >= ix.tokens)
                    continue;
                const uint32_t h = blk.h0 + hh;
                uint32_t raw = 0;
                if (slot >= 0)
                    raw = sy_ld_elem_raw<STORE>(pool.v, sy_kv_gpu_v_elem<LAYOUT, STORE>(sy_kv_gpu_v_row(pool.dims, slot, h), d));
                sy_st_elem_raw<STORE>(out, ((uint64_t)t * H + h) * D + d, raw);
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* host side                                                                                   */

/* Launch shape shared by write, gather and the fused rope write: the token group (X for
 * vectorized_5d) and the heads of a block, sized so that a block has about SY_KV_GPU_UNITS K units. */
typedef struct sy_kv_gpu_launch {
    uint32_t group, heads_per_block;
    dim3 grid;
} sy_kv_gpu_launch;

static inline sy_status sy_kv_gpu_plan(const char *op, const sy_kv_geometry *g, int64_t tokens, sy_kv_gpu_launch *l,
                                       sy_error *err)
{
    const uint32_t per = 16u / (uint32_t)sy_dtype_size(g->store_dtype);
    const uint32_t chunks = (g->head_dim + per - 1) / per;
    const uint32_t units = SY_KV_GPU_UNITS;
    uint32_t heads = units / (g->layout == SY_LAYOUT_VECTORIZED_5D ? g->vec * chunks : chunks);
    heads = heads < 1 ? 1 : heads > g->kv_heads ? g->kv_heads : heads;
    uint32_t group = g->vec;
    if (g->layout != SY_LAYOUT_VECTORIZED_5D) {
        const uint32_t max_group = SY_KV_GPU_MAX_GROUP;
        group = units / (heads * chunks);
        group = group < 1 ? 1 : group > max_group ? max_group : group;
    }
    const int64_t blocks_x = (tokens + group - 1) / group, blocks_y = (g->kv_heads + heads - 1) / heads;
    if (blocks_x > 0x7FFFFFFF || blocks_y > 65535)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld tokens x %u KV heads need a grid of %lld x %lld blocks (limit "
                          "2^31-1 x 65535)", op, (long long)tokens, g->kv_heads, (long long)blocks_x, (long long)blocks_y);
    l->group = group;
    l->heads_per_block = heads;
    l->grid = dim3((unsigned)blocks_x, (unsigned)blocks_y, 1);
    return SY_OK;
}

static inline sy_kv_gpu_pool sy_kv_gpu_pool_of(const sy_kv_geometry *g, void *k, void *v, float k_scale,
                                               float v_scale)
{
    sy_kv_gpu_pool p;
    p.dims = sy_kv_dims_of(g);
    p.k = k;
    p.v = v;
    p.k_scale = k_scale;
    p.v_scale = v_scale;
    p.row_aligned = g->layout == SY_LAYOUT_VECTORIZED_5D || (g->head_dim * sy_dtype_size(g->store_dtype)) % 16 == 0;
    return p;
}

static inline sy_kv_gpu_index sy_kv_gpu_index_of(const sy_kv_geometry *g, const sy_tensor *slots,
                                                 const sy_tensor *slot_map)
{
    sy_kv_gpu_index ix;
    ix.slots = (const int32_t *)slots->data;
    ix.slots_stride = slots->stride[0];
    ix.slot_map = (const int32_t *)slot_map->data;
    ix.map_len = slot_map->data ? slot_map->shape[0] : 0;
    ix.map_stride = slot_map->data ? slot_map->stride[0] : 0;
    ix.tokens = slots->shape[0];
    ix.pool_slots = (int64_t)g->num_pages * g->page_size;
    return ix;
}

static inline sy_kv_gpu_rows sy_kv_gpu_rows_of(const sy_tensor *k, const sy_tensor *v)
{
    sy_kv_gpu_rows r;
    const size_t es = sy_dtype_size(k->dtype);
    r.k = k->data;
    r.v = v->data;
    r.k_s0 = k->stride[0];
    r.k_s1 = k->stride[1];
    r.v_s0 = v->stride[0];
    r.v_s1 = v->stride[1];
    r.dtype = k->dtype;
    r.k_vec = sy_gpu_aligned16(k->data, es, k->stride[0], k->stride[1]);
    r.v_vec = sy_gpu_aligned16(v->data, es, v->stride[0], v->stride[1]);
    return r;
}

/* A 1-d int32 index tensor (optional ones may be absent). */
static inline sy_status sy_kv_gpu_check_index(const char *op, const char *name, const sy_tensor *t, int optional,
                                              sy_error *err)
{
    if (optional && !t->data)
        return SY_OK;
    if (!t->data || t->dtype != SY_DTYPE_I32 || t->ndim != 1)
        return sy_op_fail(err, SY_E_INVALID, "%s: %s must be a 1-d int32 tensor (got dtype %s, ndim %d)", op, name,
                          sy_op_dtype_name(t->dtype), t->ndim);
    return SY_OK;
}

/* [T, H, D] with unit stride along D, of one of `dtypes`. */
static inline sy_status sy_kv_gpu_check_rows(const char *op, const char *name, const sy_tensor *t, int64_t tokens,
                                             const sy_kv_geometry *g, uint32_t dtypes, sy_error *err)
{
    int64_t want[3] = {tokens, g->kv_heads, g->head_dim};
    sy_status st = sy_op_check_tensor(op, name, t, dtypes, 3, want, err);
    if (st == SY_OK && g->head_dim > 1 && t->stride[2] != 1)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %s has stride %lld along head_dim, expected 1", op, name,
                          (long long)t->stride[2]);
    return st;
}

/* Everything write (and the fused rope write) needs of its kv args: the geometry for LAYOUT, the
 * sources, the index tensors and the caches. Fills *g with the validated geometry. */
static inline sy_status sy_kv_gpu_check_write(const char *op, uint32_t layout, const sy_kv_write_args *a,
                                              sy_kv_geometry *g, sy_error *err)
{
    if (!a || a->struct_size < sizeof(sy_kv_write_args))
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_kv_write_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof(sy_kv_write_args));
    *g = a->geom;
    sy_status st = sy_kv_cpu_geometry(layout, g, err);
    if (st != SY_OK)
        return st;
    const int64_t T = a->slots.data ? a->slots.shape[0] : 0;
    if ((st = sy_kv_gpu_check_index(op, "slots", &a->slots, 0, err)) != SY_OK ||
        (st = sy_kv_gpu_check_index(op, "slot_map", &a->slot_map, 1, err)) != SY_OK ||
        (st = sy_kv_gpu_check_rows(op, "k", &a->k, T, g, SY_KV_CPU_SRC_DTYPES, err)) != SY_OK ||
        (st = sy_kv_gpu_check_rows(op, "v", &a->v, T, g, SY_KV_CPU_SRC_DTYPES, err)) != SY_OK)
        return st;
    if (a->k.dtype != a->v.dtype)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: k and v must have one dtype (got %s and %s)", op,
                          sy_op_dtype_name(a->k.dtype), sy_op_dtype_name(a->v.dtype));
    if (!a->k_cache || !a->v_cache)
        return sy_op_fail(err, SY_E_INVALID, "%s: k_cache or v_cache is NULL", op);
    return SY_OK;
}

/* Instantiates the kernel template `kernel` for the store dtype of g and launches it with `args`. */
#define SY_KV_GPU_DISPATCH_STORE(layout, kernel, g, grid, stream, ...)                                      \
    do {                                                                                                    \
        switch ((g)->store_dtype) {                                                                         \
        case SY_DTYPE_F32: SY_GPU_LAUNCH((grid), SY_KV_GPU_THREADS, 0, (stream), kernel<layout, SY_DTYPE_F32>)(__VA_ARGS__); break; \
        case SY_DTYPE_BF16: SY_GPU_LAUNCH((grid), SY_KV_GPU_THREADS, 0, (stream), kernel<layout, SY_DTYPE_BF16>)(__VA_ARGS__); break; \
        default: SY_GPU_LAUNCH((grid), SY_KV_GPU_THREADS, 0, (stream), kernel<layout, SY_DTYPE_FP8_E4M3>)(__VA_ARGS__); break; \
        }                                                                                                   \
    } while (0)

template <int LAYOUT>
static sy_status sy_kv_gpu_write(sy_stream stream, const sy_kv_write_args *a, sy_error *err)
{
    static const char op[] = "kv_layout.write";
    sy_kv_geometry g;
    sy_kv_gpu_launch l = {0, 0, dim3(1, 1, 1)};
    sy_status st = sy_kv_gpu_check_write(op, LAYOUT, a, &g, err);
    const int64_t T = st == SY_OK ? a->slots.shape[0] : 0;
    if (st != SY_OK || T == 0 || (st = sy_kv_gpu_plan(op, &g, T, &l, err)) != SY_OK)
        return st;
    const sy_kv_gpu_pool pool = sy_kv_gpu_pool_of(&g, a->k_cache, a->v_cache, a->k_scale, a->v_scale);
    const sy_kv_gpu_rows src = sy_kv_gpu_rows_of(&a->k, &a->v);
    const sy_kv_gpu_index ix = sy_kv_gpu_index_of(&g, &a->slots, &a->slot_map);
    SY_KV_GPU_DISPATCH_STORE(LAYOUT, sy_kv_gpu_write_kernel, &g, l.grid, sy_gpu_stream(stream), pool, src, ix, l.group,
                             l.heads_per_block);
    SY_GPU_CHECK_LAUNCH(err, "sy_kv_gpu_write_kernel");
    return SY_OK;
}

template <int LAYOUT>
static sy_status sy_kv_gpu_gather(sy_stream stream, const sy_kv_gather_args *a, sy_error *err)
{
    static const char op[] = "kv_layout.gather";
    if (!a || a->struct_size < sizeof(sy_kv_gather_args))
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_kv_gather_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof(sy_kv_gather_args));
    sy_kv_geometry g = a->geom;
    sy_kv_gpu_launch l = {0, 0, dim3(1, 1, 1)};
    sy_status st = sy_kv_cpu_geometry(LAYOUT, &g, err);
    if (st != SY_OK)
        return st;
    const int64_t T = a->slots.data ? a->slots.shape[0] : 0;
    const uint32_t store = SY_DTYPE_BIT(g.store_dtype);
    if ((st = sy_kv_gpu_check_index(op, "slots", &a->slots, 0, err)) != SY_OK ||
        (st = sy_kv_gpu_check_index(op, "slot_map", &a->slot_map, 1, err)) != SY_OK ||
        (st = sy_kv_gpu_check_rows(op, "k_out", &a->k_out, T, &g, store, err)) != SY_OK ||
        (st = sy_kv_gpu_check_rows(op, "v_out", &a->v_out, T, &g, store, err)) != SY_OK)
        return st;
    const int64_t row = (int64_t)g.kv_heads * g.head_dim;
    if (a->k_out.stride[0] != row || a->k_out.stride[1] != g.head_dim || a->v_out.stride[0] != row ||
        a->v_out.stride[1] != g.head_dim)
        return sy_op_fail(err, SY_E_INVALID, "%s: k_out and v_out must be contiguous [T, %u, %u]", op, g.kv_heads,
                          g.head_dim);
    if (!a->k_cache || !a->v_cache)
        return sy_op_fail(err, SY_E_INVALID, "%s: k_cache or v_cache is NULL", op);
    if (T == 0 || (st = sy_kv_gpu_plan(op, &g, T, &l, err)) != SY_OK)
        return st;
    sy_kv_gpu_pool pool = sy_kv_gpu_pool_of(&g, (void *)a->k_cache, (void *)a->v_cache, 1.0f, 1.0f);
    /* gather writes whole 16-byte chunks only where both the pool rows and the output rows allow. */
    pool.row_aligned = pool.row_aligned && sy_gpu_aligned16(a->k_out.data, 1, 0, 0) &&
                       sy_gpu_aligned16(a->v_out.data, 1, 0, 0) &&
                       (g.head_dim * sy_dtype_size(g.store_dtype)) % 16 == 0;
    const sy_kv_gpu_rows dst = sy_kv_gpu_rows_of(&a->k_out, &a->v_out);
    const sy_kv_gpu_index ix = sy_kv_gpu_index_of(&g, &a->slots, &a->slot_map);
    SY_KV_GPU_DISPATCH_STORE(LAYOUT, sy_kv_gpu_gather_kernel, &g, l.grid, sy_gpu_stream(stream), pool, dst, ix, l.group,
                             l.heads_per_block);
    SY_GPU_CHECK_LAUNCH(err, "sy_kv_gpu_gather_kernel");
    return SY_OK;
}

/* Defines `extern "C" const sy_kv_layout_ops ops_name` serving one layout: geometry is the host
 * plugins' pure function, write and gather the kernels above. The wrappers exist in both compiler
 * passes (they instantiate the kernels), the table in the host pass only. */
#define SY_KV_GPU_DEFINE_OPS(ops_name, layout_id)                                                           \
    [[maybe_unused]] static sy_status ops_name##_geometry(sy_kv_geometry *geom, sy_error *err)              \
    {                                                                                                       \
        return sy_kv_cpu_geometry(layout_id, geom, err);                                                    \
    }                                                                                                       \
    [[maybe_unused]] static sy_status ops_name##_write(void *ctx, sy_stream stream, const sy_kv_write_args *args, \
                                                       sy_error *err)                                       \
    {                                                                                                       \
        (void)ctx;                                                                                          \
        return sy_kv_gpu_write<layout_id>(stream, args, err);                                               \
    }                                                                                                       \
    [[maybe_unused]] static sy_status ops_name##_gather(void *ctx, sy_stream stream,                        \
                                                        const sy_kv_gather_args *args, sy_error *err)       \
    {                                                                                                       \
        (void)ctx;                                                                                          \
        return sy_kv_gpu_gather<layout_id>(stream, args, err);                                              \
    }                                                                                                       \
    SY_GPU_HOST_TABLE(extern "C" const sy_kv_layout_ops ops_name = {sizeof(sy_kv_layout_ops), 0,            \
                                                                    ops_name##_geometry, ops_name##_write,  \
                                                                    ops_name##_gather})

#endif
