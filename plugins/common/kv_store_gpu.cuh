/* The kv_layout ops on the GPU for every layout sy_kv_addr.h addresses, the layout a template
 * parameter: kv_nhd and kv_vectorized_5d instantiate the same kernels (SY_KV_GPU_DEFINE_OPS), and
 * rope_yarn's fused rope + KV write (rope_gpu.cuh) stages its rotated keys with sy_kv_gpu_tile_put
 * and shares every other step of the write, so that it equals kv_layout.write bit for bit.
 *
 * write: a block owns a tile, `tokens` consecutive tokens by `units` 16-byte units of a token's K
 * row (a unit is 16 / store bytes consecutive dims of one head; whole heads whenever they fit) and
 * as many of V, in three steps:
 *   1. load: each thread owns one unit position of the row for up to SY_KV_GPU_LOADS tokens, so its
 *      source addresses cost one multiply-add a unit, and issues all its K and V loads before the
 *      first conversion waits; meanwhile the first `tokens` threads turn their token's slot into
 *      the pool offset of its row. A block thus waits on one memory latency, where a thread that
 *      loads, stores, then loads its next unit waits on one per unit.
 *   2. stage: the units, encoded for the pool, into shared memory; one barrier.
 *   3. store, in the order that makes a warp's stores contiguous in the pool: nhd as loaded (a
 *      token's row is contiguous); vectorized_5d K with lanes on consecutive tokens (a page's
 *      X-vectors of one (head, dim / X) follow one another); vectorized_5d V transposed, a lane
 *      gathering one dim of X tokens into the 16-byte vector they share when their slots are X
 *      consecutive slots from a multiple of X (a prefill run), each element alone otherwise
 *      (decode).
 * Store rule (kv_store_cpu.h): f32 and bf16 pools round to nearest even, fp8 pools hold
 * fp8_e4m3(x / scale) with a true division. Slots below 0, before or after the slot map, are
 * skipped; so is a slot outside the pool, which the engine's call checks reject before the call
 * (device code cannot report it). gather writes zeros for such a slot.
 *
 * gather: a block owns a group of consecutive tokens and a range of heads; its threads read 16-byte
 * units of the store, two of each tensor a thread before they write any: K and nhd V chunk by
 * chunk, vectorized_5d V one vector of X tokens per (head, dim) when the group's slots are such a
 * run, element by element otherwise.
 *
 * Ops enqueue on the caller's stream and never synchronize. */
#ifndef SY_KV_STORE_GPU_CUH
#define SY_KV_STORE_GPU_CUH

#include <limits.h>

#include "gpu_runtime.h"
#include "gpu_warp.h"
#include "sy_elem_gpu.cuh"
#include "sy_fast_div.h"
#include "sy_kv_addr.h"

extern "C" {
#include "kv_store_cpu.h"
#include "sy_op_check.h"
}

enum {
    SY_KV_GPU_THREADS = 128,  /* a multiple of both warp widths */
    SY_KV_GPU_MAX_GROUP = 16, /* gather: tokens per block, X of fp8 vectorized_5d */
    SY_KV_GPU_GATHER_ITEMS = 2, /* gather: K units (and as many V items) a thread reads before it writes */
    SY_KV_GPU_UNITS = SY_KV_GPU_THREADS * SY_KV_GPU_GATHER_ITEMS, /* gather: K units a block aims at */
    SY_KV_GPU_LOADS = 4,      /* write: K units (and as many V units) a thread loads */
    SY_KV_GPU_TILE_UNITS = SY_KV_GPU_THREADS * SY_KV_GPU_LOADS, /* write: K units of a tile */
    SY_KV_GPU_MAX_TILE = 32,  /* write: tokens of a tile; at least X of fp8 vectorized_5d */
    SY_KV_GPU_MIN_BLOCKS = 256 /* write: calls too small for this many blocks get smaller tiles */
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

/* A slot as read from `slots` (-1: none) resolved through the slot map. */
SY_DEV int64_t sy_kv_gpu_resolve(const sy_kv_gpu_index &ix, int64_t s)
{
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

SY_DEV int64_t sy_kv_gpu_slot(const sy_kv_gpu_index &ix, int64_t t)
{
    return t < ix.tokens ? sy_kv_gpu_resolve(ix, ix.slots[t * ix.slots_stride]) : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* write                                                                                       */

/* The tile shape every block of a write shares (sy_kv_gpu_plan). A tile's unit r is unit r0 + r of
 * a token's row: head (r0 + r) / chunks, dims from (r0 + r) % chunks * (16 / store bytes), where
 * chunks = ceil(D / (16 / store bytes)); a row has kv_heads * chunks. */
typedef struct sy_kv_gpu_launch {
    uint32_t tokens; /* a tile's tokens: a multiple of X for vectorized_5d */
    uint32_t units;  /* a tile's units of a row, at most SY_KV_GPU_THREADS */
    dim3 grid;       /* token tiles x unit ranges of the row */
} sy_kv_gpu_launch;

/* What a write block stages: unit r of tile token j at [j * stride + r] (a tile has at most
 * SY_KV_GPU_TILE_UNITS units, and the odd stride one more a token), and per token the pool offset
 * of its K and V rows (head 0, dim 0), -1 where it is skipped. */
typedef struct sy_kv_gpu_stage {
    uint4 k[SY_KV_GPU_TILE_UNITS + SY_KV_GPU_MAX_TILE], v[SY_KV_GPU_TILE_UNITS + SY_KV_GPU_MAX_TILE];
    int64_t k_base[SY_KV_GPU_MAX_TILE], v_base[SY_KV_GPU_MAX_TILE];
} sy_kv_gpu_stage;

/* A block's tile, and the calling thread's loads: unit r0 + r of the row (head h, dims d0 .. d0 +
 * n - 1) of tile tokens j0, j0 + jstep, ...; none when j0 >= tokens. */
typedef struct sy_kv_gpu_tile {
    int64_t t0, T;
    uint32_t tokens, r0, units, stride, chunks;
    uint32_t r, j0, jstep, h, d0;
    int n;
} sy_kv_gpu_tile;

template <int STORE>
SY_DEV sy_kv_gpu_tile sy_kv_gpu_this_tile(const sy_kv_gpu_launch &l, const sy_kv_dims &g, int64_t T)
{
    constexpr uint32_t PER = sy_elems16<STORE>;
    sy_kv_gpu_tile tl;
    tl.t0 = (int64_t)blockIdx.x * l.tokens;
    tl.T = T;
    tl.tokens = l.tokens;
    tl.chunks = (g.head_dim + PER - 1) / PER;
    tl.r0 = blockIdx.y * l.units;
    const uint32_t row = g.kv_heads * tl.chunks;
    tl.units = row - tl.r0 < l.units ? row - tl.r0 : l.units;
    /* odd, so that the units of one row position for consecutive tokens fall in distinct banks */
    tl.stride = l.units | 1u;
    tl.jstep = SY_KV_GPU_THREADS / tl.units;
    tl.r = threadIdx.x % tl.units;
    tl.j0 = threadIdx.x < tl.jstep * tl.units ? threadIdx.x / tl.units : tl.tokens;
    tl.h = (tl.r0 + tl.r) / tl.chunks;
    tl.d0 = (tl.r0 + tl.r) % tl.chunks * PER;
    tl.n = (int)(g.head_dim - tl.d0 < PER ? g.head_dim - tl.d0 : PER);
    return tl;
}

/* The calling thread's tile token's entry of `slots` (-1 past the tile or the call): a load issued
 * ahead of the data loads, for sy_kv_gpu_tile_slots to resolve once they are in flight. */
SY_DEV int64_t sy_kv_gpu_tile_slot_raw(const sy_kv_gpu_index &ix, const sy_kv_gpu_tile &tl)
{
    const int64_t t = tl.t0 + threadIdx.x;
    return threadIdx.x < tl.tokens && t < ix.tokens ? ix.slots[t * ix.slots_stride] : -1;
}

/* The first `tokens` threads: their token's row offsets in the stage. */
template <int LAYOUT>
SY_DEV void sy_kv_gpu_tile_slots(const sy_kv_gpu_index &ix, const sy_kv_dims &g, const sy_kv_gpu_tile &tl,
                                 int64_t raw, sy_kv_gpu_stage &s)
{
    const uint32_t j = threadIdx.x;
    if (j >= tl.tokens)
        return;
    const int64_t slot = sy_kv_gpu_resolve(ix, raw);
    if constexpr (LAYOUT == SY_LAYOUT_VECTORIZED_5D) {
        const uint32_t page = (uint32_t)slot / g.page_size, off = (uint32_t)slot % g.page_size;
        s.k_base[j] = slot < 0 ? -1 : (int64_t)sy_kv_5d_k_offset_at(&g, page, off, 0, 0);
        s.v_base[j] = slot < 0 ? -1 : (int64_t)sy_kv_5d_v_offset_at(&g, page, off, 0, 0);
    } else {
        s.k_base[j] = s.v_base[j] = slot < 0 ? -1 : (int64_t)sy_kv_nhd_offset(&g, slot, 0, 0);
    }
}

/* Eight bf16 values as a bf16 pool stores them: sy_f32_to_bf16 of their f32 value gives each back
 * unchanged except a NaN, which comes back quiet (bit 6 set); done on the raw halves, this costs a
 * few instructions a word where the round trip through f32 costs about ten a value. */
SY_DEV uint4 sy_kv_gpu_bf16_as_stored(uint4 v)
{
#pragma unroll
    for (int w = 0; w < 4; w++) {
        const uint32_t x = sy_word(v, w), lo = x & 0x7FFFu, hi = (x >> 16) & 0x7FFFu;
        sy_set_word(v, w, x | (lo > 0x7F80u ? 0x40u : 0u) | (hi > 0x7F80u ? 0x400000u : 0u));
    }
    return v;
}

/* Fills the stage: the tile's V units, and its K units with WITH_K, loaded from the [T, H, D]
 * sources of dtype SRC and encoded for the pool, and its tokens' row offsets. A unit past the tile
 * or the call loads the last token again rather than branch around its load, and is never staged.
 * With 16-byte loads (the sources allow them and the unit is whole) the thread's loads all go out,
 * then the slot work, then the conversions: one memory latency for all of it. Element loads, and
 * units of more than 32 source bytes (f32 into fp8), go unit by unit: holding all of them would
 * cost the kernel more registers than its warps can spare. */
template <int LAYOUT, int STORE, int SRC, bool WITH_K>
SY_DEV void sy_kv_gpu_tile_fill(const sy_kv_gpu_tile &tl, const sy_kv_gpu_rows &src, const sy_kv_gpu_index &ix,
                                const sy_kv_gpu_pool &pool, sy_kv_gpu_stage &s)
{
    constexpr int PER = sy_elems16<STORE>;
    constexpr bool RAW = STORE == SY_DTYPE_BF16 && SRC == SY_DTYPE_BF16, HOLD = PER * sy_elem_size<SRC> <= 32;
    const int64_t slot = sy_kv_gpu_tile_slot_raw(ix, tl);
    const int64_t last = (tl.T - tl.t0 < tl.tokens ? tl.T - tl.t0 : tl.tokens) - 1;
    const int64_t k_at = (int64_t)tl.h * src.k_s1 + tl.d0, v_at = (int64_t)tl.h * src.v_s1 + tl.d0;
    const bool vec = tl.n == PER && src.v_vec && (!WITH_K || src.k_vec);
    if (HOLD && vec && tl.j0 < tl.tokens) {
        float xk[SY_KV_GPU_LOADS][PER], xv[SY_KV_GPU_LOADS][PER];
        uint4 rk[SY_KV_GPU_LOADS], rv[SY_KV_GPU_LOADS];
#pragma unroll
        for (int i = 0; i < SY_KV_GPU_LOADS; i++) {
            const int64_t j = tl.j0 + i * tl.jstep, t = tl.t0 + (j < last ? j : last);
            if constexpr (RAW) {
                if constexpr (WITH_K)
                    rk[i] = sy_ld_raw<16>((const uint16_t *)src.k + t * src.k_s0 + k_at);
                rv[i] = sy_ld_raw<16>((const uint16_t *)src.v + t * src.v_s0 + v_at);
            } else {
                if constexpr (WITH_K)
                    sy_gpu_load_act_run_as<PER, SRC>(src.k, t * src.k_s0 + k_at, PER, true, xk[i]);
                sy_gpu_load_act_run_as<PER, SRC>(src.v, t * src.v_s0 + v_at, PER, true, xv[i]);
            }
        }
        sy_kv_gpu_tile_slots<LAYOUT>(ix, pool.dims, tl, slot, s);
#pragma unroll
        for (int i = 0; i < SY_KV_GPU_LOADS; i++) {
            const uint32_t j = tl.j0 + i * tl.jstep, at = j * tl.stride + tl.r;
            if (j >= tl.tokens)
                continue;
            if constexpr (WITH_K)
                s.k[at] = RAW ? sy_kv_gpu_bf16_as_stored(rk[i]) : sy_pack<STORE>(xk[i], pool.k_scale);
            s.v[at] = RAW ? sy_kv_gpu_bf16_as_stored(rv[i]) : sy_pack<STORE>(xv[i], pool.v_scale);
        }
        return;
    }
#pragma unroll 1
    for (uint32_t j = tl.j0; j < tl.tokens; j += tl.jstep) {
        const int64_t t = tl.t0 + (j < last ? j : last);
        float x[PER];
        if constexpr (WITH_K) {
            sy_gpu_load_act_run_as<PER, SRC>(src.k, t * src.k_s0 + k_at, tl.n, vec, x);
            s.k[j * tl.stride + tl.r] = sy_pack<STORE>(x, pool.k_scale);
        }
        sy_gpu_load_act_run_as<PER, SRC>(src.v, t * src.v_s0 + v_at, tl.n, vec, x);
        s.v[j * tl.stride + tl.r] = sy_pack<STORE>(x, pool.v_scale);
    }
    sy_kv_gpu_tile_slots<LAYOUT>(ix, pool.dims, tl, slot, s);
}

/* Stages x[0 .. N), encoded for the pool, as dims d0 .. d0 + N - 1 of the tile's head hh for tile
 * token j (the tile's heads must be whole): for producers whose own work split is not the tile's,
 * such as the fused rope's rotation. */
template <int STORE, int N>
SY_DEV void sy_kv_gpu_tile_put(const sy_kv_gpu_tile &tl, uint4 *staged, uint32_t j, uint32_t hh, uint32_t d0,
                               const float *x, float scale)
{
    constexpr uint32_t PER = sy_elems16<STORE>;
    const uint32_t head = j * tl.stride + hh * tl.chunks;
    if constexpr (N % PER == 0) {
        if (d0 % PER == 0) {
#pragma unroll
            for (uint32_t piece = 0; piece < N / PER; piece++)
                staged[head + d0 / PER + piece] = sy_pack<STORE>(x + piece * PER, scale);
            return;
        }
    }
#pragma unroll
    for (uint32_t e = 0; e < (uint32_t)N; e++) {
        const uint32_t d = d0 + e;
        sy_st_elem_raw<STORE>(staged, (uint64_t)(head + d / PER) * PER + d % PER, sy_gpu_encode<STORE>(x[e], scale));
    }
}

/* nhd, K or V: lanes on consecutive units of a row, which are consecutive 16 bytes of the pool
 * (unit r at r * 16 / store bytes elements into the row) when rows are whole 16-byte units
 * (D * store bytes % 16 == 0); other rows go element by element. */
template <int STORE>
SY_DEV void sy_kv_gpu_tile_store_rows(const sy_kv_gpu_pool &pool, const sy_kv_gpu_tile &tl, void *cache,
                                      const uint4 *staged, const int64_t *base)
{
    constexpr int ES = sy_elem_size<STORE>;
    constexpr uint32_t PER = sy_elems16<STORE>;
    const uint32_t D = pool.dims.head_dim;
    for (uint32_t u = threadIdx.x; u < tl.tokens * tl.units; u += SY_KV_GPU_THREADS) {
        const uint32_t j = u / tl.units, r = tl.r0 + u % tl.units;
        if (base[j] < 0)
            continue;
        const uint4 x = staged[j * tl.stride + r - tl.r0];
        if (pool.row_aligned) {
            sy_st_raw<16>((char *)cache + ((uint64_t)base[j] + r * PER) * ES, x);
        } else {
            const uint32_t d0 = r % tl.chunks * PER, n = D - d0 < PER ? D - d0 : PER;
            const uint64_t o = (uint64_t)base[j] + sy_kv_nhd_offset(&pool.dims, 0, r / tl.chunks, d0);
            for (uint32_t e = 0; e < n; e++)
                sy_st_elem_raw<STORE>(cache, o + e, sy_raw_at<STORE>(x, (int)e));
        }
    }
}

/* vectorized_5d K, lanes on consecutive tokens. Unit r of a row (head r / chunks, dims from
 * (r % chunks) X) starts (r / chunks) D P + (r % chunks) P X = r P X elements past the row's
 * offset, as D = chunks X. */
template <int STORE>
SY_DEV void sy_kv_gpu_tile_store_k5(const sy_kv_gpu_pool &pool, const sy_kv_gpu_tile &tl, const sy_kv_gpu_stage &s)
{
    constexpr int ES = sy_elem_size<STORE>;
    const uint32_t per_pass = SY_KV_GPU_THREADS / tl.tokens, j = threadIdx.x % tl.tokens;
    const int64_t base = s.k_base[j];
    if (threadIdx.x >= per_pass * tl.tokens || base < 0)
        return;
    const uint64_t step = (uint64_t)pool.dims.page_size * pool.dims.vec;
    for (uint32_t r = threadIdx.x / tl.tokens; r < tl.units; r += per_pass)
        sy_st_raw<16>((char *)pool.k + ((uint64_t)base + (tl.r0 + r) * step) * ES, s.k[j * tl.stride + r]);
}

/* vectorized_5d V: a unit is one dim of one group of X tokens, lanes on consecutive dims (a group's
 * vectors of consecutive dims are consecutive in the page). The group's X values of a dim share one
 * vector when their slots are X consecutive slots from a multiple of X, which is when their row
 * offsets (page H D P + (off / X) D X + off % X) are X consecutive offsets from a multiple of X. */
template <int STORE>
SY_DEV void sy_kv_gpu_tile_store_v5(const sy_kv_gpu_pool &pool, const sy_kv_gpu_tile &tl, const sy_kv_gpu_stage &s)
{
    constexpr int ES = sy_elem_size<STORE>, X = sy_elems16<STORE>;
    const uint32_t D = pool.dims.head_dim, elems = tl.units * X, units = tl.tokens / X * elems;
    /* element e of the units staged for tile token j: [j * next + e] */
    const uint64_t next = (uint64_t)tl.stride * X;
    uint32_t group = ~0u;
    bool run = false;
    for (uint32_t u = threadIdx.x; u < units; u += SY_KV_GPU_THREADS) {
        const uint32_t g = u / elems, e = u % elems, hd = tl.r0 * X + e, j0 = g * X;
        if (g != group) {
            group = g;
            run = s.v_base[j0] >= 0 && s.v_base[j0] % X == 0;
            for (int i = 1; i < X; i++)
                run &= s.v_base[j0 + i] == s.v_base[j0] + i;
        }
        const uint64_t at = sy_kv_5d_v_offset_at(&pool.dims, 0, 0, hd / D, hd % D), col = j0 * next + e;
        if (run) {
            uint4 x = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
            for (int i = 0; i < X; i++) {
                const int w = i * ES / 4, shift = 8 * ((i * ES) % 4);
                sy_set_word(x, w, sy_word(x, w) | sy_ld_elem_raw<STORE>(s.v, col + i * next) << shift);
            }
            sy_st_raw<16>((char *)pool.v + ((uint64_t)s.v_base[j0] + at) * ES, x);
        } else {
            for (int i = 0; i < X; i++)
                if (s.v_base[j0 + i] >= 0)
                    sy_st_elem_raw<STORE>(pool.v, (uint64_t)s.v_base[j0 + i] + at,
                                          sy_ld_elem_raw<STORE>(s.v, col + i * next));
        }
    }
}

/* The staged tile into the pool, after the barrier that publishes the stage. */
template <int LAYOUT, int STORE>
SY_DEV void sy_kv_gpu_tile_store(const sy_kv_gpu_pool &pool, const sy_kv_gpu_tile &tl, const sy_kv_gpu_stage &s)
{
    if constexpr (LAYOUT == SY_LAYOUT_VECTORIZED_5D) {
        sy_kv_gpu_tile_store_k5<STORE>(pool, tl, s);
        sy_kv_gpu_tile_store_v5<STORE>(pool, tl, s);
    } else {
        sy_kv_gpu_tile_store_rows<STORE>(pool, tl, pool.k, s.k, s.k_base);
        sy_kv_gpu_tile_store_rows<STORE>(pool, tl, pool.v, s.v, s.v_base);
    }
}

/* SRC, the sources' dtype, is a kernel parameter so that each kernel holds only its own loads. */
template <int LAYOUT, int STORE, int SRC>
static __global__ __launch_bounds__(SY_KV_GPU_THREADS) void sy_kv_gpu_write_kernel(
    const sy_kv_gpu_pool pool, const sy_kv_gpu_rows src, const sy_kv_gpu_index ix, const sy_kv_gpu_launch l)
{
    __shared__ sy_kv_gpu_stage s;
    sy_gpu_wait_for_previous_kernel();
    const sy_kv_gpu_tile tl = sy_kv_gpu_this_tile<STORE>(l, pool.dims, ix.tokens);
    sy_kv_gpu_tile_fill<LAYOUT, STORE, SRC, true>(tl, src, ix, pool, s);
    __syncthreads();
    sy_kv_gpu_tile_store<LAYOUT, STORE>(pool, tl, s);
}

/* ------------------------------------------------------------------------------------------ */
/* gather                                                                                      */

/* The block's token group and head range. */
typedef struct sy_kv_gpu_block {
    int64_t t0;
    uint32_t tokens; /* in the group, those past T included (their slot is -1) */
    uint32_t h0, heads;
} sy_kv_gpu_block;

/* Fills slot_s[0 .. blk.tokens) and *run_s: 1 when the group's slots are X consecutive slots
 * starting on a multiple of X (then they share one page and one 16-byte V vector per dim). Every
 * thread of the block must call it (it ends with a barrier). The first warp reads the slots, one a
 * lane (a group is at most SY_KV_GPU_MAX_GROUP <= 32 tokens), and decides the run with shuffles, so
 * that the block's data loads wait on one barrier after the slots' load, not on a second barrier
 * behind one thread's walk through them. */
template <int LAYOUT>
SY_DEV void sy_kv_gpu_block_slots(const sy_kv_gpu_index &ix, const sy_kv_gpu_block &blk, uint32_t vec,
                                  int64_t *slot_s, int *run_s)
{
    static_assert(SY_KV_GPU_MAX_GROUP <= 32, "a group's slots fit one warp");
    if (threadIdx.x < SY_WARP_SIZE) {
        const uint32_t j = threadIdx.x;
        const int64_t slot = j < blk.tokens ? sy_kv_gpu_slot(ix, blk.t0 + j) : -1;
        if (j < blk.tokens)
            slot_s[j] = slot;
        int run = 0; /* nhd reads every token by its own slot */
        if (LAYOUT == SY_LAYOUT_VECTORIZED_5D && blk.tokens == vec) {
            /* a run: slot_j - j the same for every j (then slot_0), not negative, a multiple of X */
            const long long from = (long long)(slot - (int64_t)j);
            const long long lo = sy_warp_reduce<sy_reduce_min_i64>(j < blk.tokens ? from : LLONG_MAX);
            const long long hi = sy_warp_reduce<sy_reduce_max_i64>(j < blk.tokens ? from : LLONG_MIN);
            run = lo == hi && lo >= 0 && lo % (long long)vec == 0;
        }
        if (j == 0)
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

SY_DEV sy_kv_gpu_block sy_kv_gpu_this_block(uint32_t group, uint32_t heads_per_block, uint32_t kv_heads)
{
    sy_kv_gpu_block blk;
    blk.t0 = (int64_t)blockIdx.x * group;
    blk.tokens = group;
    blk.h0 = blockIdx.y * heads_per_block;
    blk.heads = kv_heads - blk.h0 < heads_per_block ? kv_heads - blk.h0 : heads_per_block;
    return blk;
}

/* A gather call's divisors (sy_fast_div.h), worked out on the host: a unit's chunk, head and token
 * and a slot's page are quotients and remainders of run-time values, and a GPU has no integer
 * divide (about twenty instructions each; ncu had the kernel issue-bound with about ten a unit). */
typedef struct sy_kv_gpu_gather_divs {
    sy_fast_div chunks; /* 16-byte chunks of a row: ceil(D / (16 / store bytes)) */
    sy_fast_div heads;  /* heads a block (the last blocks along y may have fewer) */
    sy_fast_div page;   /* P */
    sy_fast_div dims;   /* D */
} sy_kv_gpu_gather_divs;

/* What a gather block reads and writes: its tokens' slots, and its part of the output rows. */
struct sy_kv_gpu_gather_block {
    const sy_kv_gpu_pool &pool;
    const sy_kv_gpu_rows &dst;
    const sy_kv_gpu_index &ix;
    const sy_kv_gpu_block &blk;
    const int64_t *slot_s;
    const sy_kv_gpu_gather_divs &div;
};

/* The K or V row of (slot, h), the slot's page and offset by the call's page divisor (slots of a
 * gather are below 2^31: sy_kv_gpu_gather_plan). */
SY_DEV sy_kv_row sy_kv_gpu_gather_row(const sy_kv_dims &g, const sy_fast_div &page, bool value, int64_t slot, uint32_t h)
{
    const uint32_t pg = sy_fast_div_quot(page, (uint32_t)slot), off = (uint32_t)slot - pg * page.divisor;
    return value ? sy_kv_v_row_at(&g, pg, off, h) : sy_kv_k_row_at(&g, pg, off, h);
}

/* Unit u of the block's K rows (or, `value`, its nhd V rows): chunk u % chunks of head u / chunks
 * % heads of token u / (chunks heads), heads the call's heads a block (units of heads past the
 * block's are none). `out` is where it goes (-1 past the call), its count of valid elements in *n. */
template <int LAYOUT, int STORE>
SY_DEV uint4 sy_kv_gpu_gather_unit(const sy_kv_gpu_gather_block &g, bool value, uint32_t u, int64_t *out, int *n)
{
    constexpr int ES = sy_elem_size<STORE>;
    constexpr uint32_t PER = sy_elems16<STORE>;
    const uint32_t D = g.pool.dims.head_dim, H = g.pool.dims.kv_heads;
    const uint32_t row = sy_fast_div_quot(g.div.chunks, u), c = u - row * g.div.chunks.divisor;
    const uint32_t j = sy_fast_div_quot(g.div.heads, row), hh = row - j * g.div.heads.divisor;
    const int64_t t = g.blk.t0 + j, slot = g.slot_s[j];
    uint4 raw = make_uint4(0u, 0u, 0u, 0u);
    *out = -1;
    if (t >= g.ix.tokens || hh >= g.blk.heads)
        return raw;
    const uint32_t h = g.blk.h0 + hh, d0 = c * PER;
    *n = (int)(D - d0 < PER ? D - d0 : PER);
    *out = ((int64_t)t * H + h) * D + d0;
    if (slot >= 0) {
        const uint64_t e = sy_kv_gpu_k_elem<LAYOUT, STORE>(sy_kv_gpu_gather_row(g.pool.dims, g.div.page, value, slot, h), d0);
        const void *cache = value ? g.pool.v : g.pool.k;
        raw = *n == (int)PER && g.pool.row_aligned ? sy_ld_raw<16>((const char *)cache + e * ES)
                                                   : sy_ld_elems_raw<STORE>(cache, e, *n);
    }
    return raw;
}

template <int STORE>
SY_DEV void sy_kv_gpu_gather_put(const sy_kv_gpu_gather_block &g, bool value, int64_t out, int n, uint4 raw)
{
    constexpr uint32_t PER = sy_elems16<STORE>;
    char *base = (char *)(value ? g.dst.v : g.dst.k);
    if (out < 0)
        return;
    if (n == (int)PER && g.pool.row_aligned)
        sy_st_raw<16>(base + out * sy_elem_size<STORE>, raw);
    else
        for (int i = 0; i < n; i++)
            sy_st_elem_raw<STORE>(base, (uint64_t)out + i, sy_raw_at<STORE>(raw, i));
}

/* gather: the same units read back, bit for bit, into contiguous [T, H, D] rows of the store dtype.
 * A thread reads its SY_KV_GPU_GATHER_ITEMS K units and as many V units (vectorized_5d: V vectors)
 * before it writes any, so that a block waits on two memory latencies (the slots, then the data),
 * where reading K, writing it, then reading V took three; and a call's blocks fit one wave. H200,
 * the extend chunk's gather of 4608 tokens (one process, three rounds): nhd 11.5-11.6 -> 10.5-10.6
 * us, vectorized_5d 12.1-12.2 -> 11.5-11.6 us; one item a thread 10.7 / 11.8-11.9, four 10.7-10.9
 * / 12.0-12.1. */
template <int LAYOUT, int STORE>
static __global__ __launch_bounds__(SY_KV_GPU_THREADS) void sy_kv_gpu_gather_kernel(
    const sy_kv_gpu_pool pool, const sy_kv_gpu_rows dst, const sy_kv_gpu_index ix, uint32_t group,
    const sy_kv_gpu_gather_divs div)
{
    constexpr int ES = sy_elem_size<STORE>;
    constexpr uint32_t PER = sy_elems16<STORE>;
    constexpr bool V5D = LAYOUT == SY_LAYOUT_VECTORIZED_5D;
    __shared__ int64_t slot_s[SY_KV_GPU_MAX_GROUP];
    __shared__ int run_s;
    const sy_kv_gpu_block blk = sy_kv_gpu_this_block(group, div.heads.divisor, pool.dims.kv_heads);
    sy_kv_gpu_block_slots<LAYOUT>(ix, blk, pool.dims.vec, slot_s, &run_s);
    const uint32_t D = pool.dims.head_dim, H = pool.dims.kv_heads;
    const sy_kv_gpu_gather_block g = {pool, dst, ix, blk, slot_s, div};
    /* units of every head a block may have: those of heads past this block's read nothing */
    const uint32_t k_units = blk.tokens * div.heads.divisor * div.chunks.divisor;
    /* V items: nhd V's units as K's; vectorized_5d V's X-token vectors of one (head, dim) when the
     * group's slots are such a run (else element by element, below) */
    const uint32_t v_items = V5D ? (run_s ? blk.heads * D : 0u) : k_units;
    const uint32_t items = k_units > v_items ? k_units : v_items;
    constexpr int N = SY_KV_GPU_GATHER_ITEMS;
    for (uint32_t u0 = threadIdx.x; u0 < items; u0 += N * blockDim.x) {
        int64_t k_out[N], v_out[N];
        int k_n[N], v_n[N];
        uint4 k_raw[N], v_raw[N];
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t u = u0 + i * blockDim.x;
            k_out[i] = v_out[i] = -1;
            k_n[i] = v_n[i] = 0;
            k_raw[i] = v_raw[i] = make_uint4(0u, 0u, 0u, 0u);
            if (u < k_units)
                k_raw[i] = sy_kv_gpu_gather_unit<LAYOUT, STORE>(g, false, u, &k_out[i], &k_n[i]);
            if (u < v_items) {
                if constexpr (V5D) {
                    const uint32_t hh = sy_fast_div_quot(div.dims, u), d = u - hh * D;
                    const sy_kv_row row = sy_kv_gpu_gather_row(pool.dims, div.page, true, slot_s[0], blk.h0 + hh);
                    v_raw[i] = sy_ld_raw<16>((const char *)pool.v + sy_kv_gpu_v_elem<LAYOUT, STORE>(row, d) * ES);
                } else {
                    v_raw[i] = sy_kv_gpu_gather_unit<LAYOUT, STORE>(g, true, u, &v_out[i], &v_n[i]);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t u = u0 + i * blockDim.x;
            sy_kv_gpu_gather_put<STORE>(g, false, k_out[i], k_n[i], k_raw[i]);
            if (u >= v_items)
                continue;
            if constexpr (V5D) {
                const uint32_t hh = sy_fast_div_quot(div.dims, u), d = u - hh * D, h = blk.h0 + hh;
#pragma unroll
                for (int j = 0; j < (int)PER; j++)
                    sy_st_elem_raw<STORE>(dst.v, ((uint64_t)(blk.t0 + j) * H + h) * D + d, sy_raw_at<STORE>(v_raw[i], j));
            } else {
                sy_kv_gpu_gather_put<STORE>(g, true, v_out[i], v_n[i], v_raw[i]);
            }
        }
    }
    if constexpr (V5D) {
        if (!run_s) {
            for (uint32_t u = threadIdx.x; u < blk.tokens * blk.heads * D; u += blockDim.x) {
                const uint32_t d = u % D, hh = u / D % blk.heads, j = u / (D * blk.heads);
                const int64_t t = blk.t0 + j, slot = slot_s[j];
                if (t >= ix.tokens)
                    continue;
                const uint32_t h = blk.h0 + hh;
                uint32_t raw = 0;
                if (slot >= 0)
                    raw = sy_ld_elem_raw<STORE>(pool.v, sy_kv_gpu_v_elem<LAYOUT, STORE>(sy_kv_gpu_gather_row(pool.dims, div.page, true, slot, h), d));
                sy_st_elem_raw<STORE>(dst.v, ((uint64_t)t * H + h) * D + d, raw);
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* host side                                                                                   */

static inline sy_status sy_kv_gpu_grid(const char *op, int64_t tokens, uint32_t kv_heads, int64_t blocks_x,
                                       int64_t blocks_y, dim3 *grid, sy_error *err)
{
    if (blocks_x > 0x7FFFFFFF || blocks_y > 65535)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld tokens x %u KV heads need a grid of %lld x %lld blocks (limit "
                          "2^31-1 x 65535)", op, (long long)tokens, kv_heads, (long long)blocks_x, (long long)blocks_y);
    *grid = dim3((unsigned)blocks_x, (unsigned)blocks_y, 1);
    return SY_OK;
}

/* The write's tiles, which the fused rope write shares. A tile takes whole heads, as many as leave
 * room for X tokens (vectorized_5d) in SY_KV_GPU_TILE_UNITS units, at most SY_KV_GPU_THREADS
 * units, then as many tokens as its threads load in SY_KV_GPU_LOADS units each. A head is split
 * only past SY_KV_GPU_TILE_UNITS = 4 SY_KV_GPU_THREADS dims (a unit holds at least 4 dims, and X for
 * vectorized_5d). A call too small for SY_KV_GPU_MIN_BLOCKS blocks (decode) takes fewer tokens a
 * tile, down to X, then fewer heads, down to one, so that more SMs share its latency; the fused
 * rope shares its q heads out among a token tile's blocks likewise. */
static inline sy_status sy_kv_gpu_plan(const char *op, const sy_kv_geometry *g, int64_t tokens, sy_kv_gpu_launch *l,
                                       sy_error *err)
{
    const uint32_t per = 16u / (uint32_t)sy_dtype_size(g->store_dtype);
    const uint32_t chunks = (g->head_dim + per - 1) / per, row = g->kv_heads * chunks;
    const uint32_t x = g->layout == SY_LAYOUT_VECTORIZED_5D ? g->vec : 1u;
    const uint32_t threads = SY_KV_GPU_THREADS, most = SY_KV_GPU_TILE_UNITS, max_tile = SY_KV_GPU_MAX_TILE;
    const uint32_t cap = most / x < threads ? most / x : threads;
    uint32_t units = row <= cap ? row : chunks <= cap ? cap / chunks * chunks : cap;
    uint32_t tile = threads / units * SY_KV_GPU_LOADS;
    tile = tile < most / units ? tile : most / units;
    tile = (tile < max_tile ? tile : max_tile) / x * x;
    for (;;) {
        const int64_t blocks = (tokens + tile - 1) / tile * ((row + units - 1) / units);
        if (blocks >= SY_KV_GPU_MIN_BLOCKS)
            break;
        if (tile > x)
            tile = tile / 2 / x * x > x ? tile / 2 / x * x : x;
        else if (units > chunks && units % chunks == 0)
            units = (units / chunks + 1) / 2 * chunks;
        else
            break;
    }
    l->tokens = tile;
    l->units = units;
    return sy_kv_gpu_grid(op, tokens, g->kv_heads, (tokens + tile - 1) / tile, (row + units - 1) / units, &l->grid,
                          err);
}

/* gather: the token group (X for vectorized_5d) and the heads of a block, sized so that a block has
 * about SY_KV_GPU_UNITS K units. */
typedef struct sy_kv_gpu_gather_launch {
    uint32_t group;
    sy_kv_gpu_gather_divs div;
    dim3 grid;
} sy_kv_gpu_gather_launch;

static inline sy_status sy_kv_gpu_gather_plan(const char *op, const sy_kv_geometry *g, int64_t tokens,
                                              sy_kv_gpu_gather_launch *l, sy_error *err)
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
    l->group = group;
    l->div.chunks = sy_fast_div_of(chunks);
    l->div.heads = sy_fast_div_of(heads);
    l->div.page = sy_fast_div_of(g->page_size);
    l->div.dims = sy_fast_div_of(g->head_dim);
    /* slots are divided in 32 bits (sy_kv_gpu_gather_row) */
    if ((uint64_t)g->num_pages * g->page_size > SY_FAST_DIV_NUMERATOR_LIMIT)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: a pool of %llu slots: the GPU gather takes at most 2^31", op,
                          (unsigned long long)g->num_pages * g->page_size);
    return sy_kv_gpu_grid(op, tokens, g->kv_heads, (tokens + group - 1) / group, (g->kv_heads + heads - 1) / heads,
                          &l->grid, err);
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

template <int LAYOUT, int STORE>
static void sy_kv_gpu_write_launch(const sy_kv_gpu_launch &l, gpuStream_t stream, const sy_kv_gpu_pool &pool,
                                   const sy_kv_gpu_rows &src, const sy_kv_gpu_index &ix)
{
    if (src.dtype == SY_DTYPE_BF16)
        SY_GPU_LAUNCH_CHAINED(l.grid, SY_KV_GPU_THREADS, 0, stream, sy_kv_gpu_write_kernel<LAYOUT, STORE, SY_DTYPE_BF16>)(
            pool, src, ix, l);
    else
        SY_GPU_LAUNCH_CHAINED(l.grid, SY_KV_GPU_THREADS, 0, stream, sy_kv_gpu_write_kernel<LAYOUT, STORE, SY_DTYPE_F32>)(
            pool, src, ix, l);
}

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
    switch (g.store_dtype) {
    case SY_DTYPE_F32: sy_kv_gpu_write_launch<LAYOUT, SY_DTYPE_F32>(l, sy_gpu_stream(stream), pool, src, ix); break;
    case SY_DTYPE_BF16: sy_kv_gpu_write_launch<LAYOUT, SY_DTYPE_BF16>(l, sy_gpu_stream(stream), pool, src, ix); break;
    default: sy_kv_gpu_write_launch<LAYOUT, SY_DTYPE_FP8_E4M3>(l, sy_gpu_stream(stream), pool, src, ix); break;
    }
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
    sy_kv_gpu_gather_launch l = {0, {}, dim3(1, 1, 1)};
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
    if (T == 0 || (st = sy_kv_gpu_gather_plan(op, &g, T, &l, err)) != SY_OK)
        return st;
    sy_kv_gpu_pool pool = sy_kv_gpu_pool_of(&g, (void *)a->k_cache, (void *)a->v_cache, 1.0f, 1.0f);
    /* gather writes whole 16-byte chunks only where both the pool rows and the output rows allow. */
    pool.row_aligned = pool.row_aligned && sy_gpu_aligned16(a->k_out.data, 1, 0, 0) &&
                       sy_gpu_aligned16(a->v_out.data, 1, 0, 0) &&
                       (g.head_dim * sy_dtype_size(g.store_dtype)) % 16 == 0;
    const sy_kv_gpu_rows dst = sy_kv_gpu_rows_of(&a->k_out, &a->v_out);
    const sy_kv_gpu_index ix = sy_kv_gpu_index_of(&g, &a->slots, &a->slot_map);
    SY_KV_GPU_DISPATCH_STORE(LAYOUT, sy_kv_gpu_gather_kernel, &g, l.grid, sy_gpu_stream(stream), pool, dst, ix, l.group,
                             l.div);
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
