/* Decode attention on the GPU: one query token per sequence against its pages, read natively in
 * nhd or vectorized_5d (the layout a template parameter), GQA, sliding window, sinks, fp8 K/V with
 * per-tensor scales, split-K over the context with a log-sum-exp combine.
 *
 * Blocks. One block per (split, KV head and chunk of up to GH of its q heads, sequence): the block
 * loads each K/V tile of its split once for the whole GQA group. Splits cover TILE-aligned ranges
 * of the (windowed) context; with more than one, each block writes its partial (m, l, acc) and a
 * second kernel combines the splits of each (sequence, q head) by log-sum-exp and adds the sink.
 *
 * Tiles. TILE = 64 key positions, aligned to multiples of 64, staged in shared memory with 16-byte
 * loads and stores only:
 *   K: [token][dims] rows. nhd reads 16-byte pieces of a token's contiguous row; vectorized_5d reads
 *      X-vectors, consecutive threads on consecutive tokens of one (page, head, d/X), contiguous.
 *   V: nhd [token][dims] as K; vectorized_5d [dim][tokens] straight from its (P/X, D, X) tiles, each
 *      16-byte vector X consecutive tokens of one dim.
 * Rows are padded by 16 bytes so that the strided reads of the compute phases hit distinct banks.
 * When the next tile fits in registers (at most 8 pieces a thread) its loads are issued before the
 * current tile is computed, so each block keeps a tile of memory traffic in flight.
 *
 * Compute. The softmax runs on CUDA cores, 128/GH threads per head. The QK and PV products are
 * small GEMMs (GH x TILE x D): on CUDA with bf16 or fp8 K/V they run on tensor cores
 * (attn_decode_gpu_mma.cuh, MMA = true); otherwise (f32 K/V, the HIP build) on CUDA cores, each
 * thread a register tile: QK 2 tokens x GH/4 heads, PV GH/4 heads x DMAX/32 dims. */
#ifndef SY_ATTN_DECODE_GPU_CUH
#define SY_ATTN_DECODE_GPU_CUH

#include <type_traits>

#include "attn_core_gpu.cuh"
#include "sy_kv_addr.h"

#if defined(SY_VENDOR_CUDA)
#include "attn_decode_gpu_mma.cuh"
#define SY_ATTN_DECODE_TENSOR_CORES 1
#define SY_ATTN_DECODE_WARP_KERNEL 1
#elif defined(SY_EMU_TENSOR_CORES)
#define SY_ATTN_DECODE_TENSOR_CORES 0
#define SY_ATTN_DECODE_WARP_KERNEL 1 /* tests/gpu's emulator runs its fragments */
#else
#define SY_ATTN_DECODE_TENSOR_CORES 0
#define SY_ATTN_DECODE_WARP_KERNEL 0
#endif

typedef struct sy_attn_gpu_decode {
    sy_attn_gpu_call c;
    const void *k_cache, *v_cache;
    sy_kv_dims dims;
    const int32_t *block_tables;
    int64_t bt_s0;
    const int32_t *context_lens;
    int64_t cl_s0;
    uint32_t batch;       /* sequences */
    uint32_t group;       /* q heads per KV head */
    uint32_t head_chunks; /* blocks per KV head: ceil(group / GH) */
    uint32_t num_splits;
    uint32_t row_aligned; /* nhd rows start on 16 bytes */
    uint32_t tiles_in_page; /* the page size is a multiple of SY_ATTN_DECODE_TILE (see sy_attn_gpu_decode_tile) */
    float *part_ml;       /* num_splits > 1: [B][Hq][splits][2] (m, l) */
    float *part_acc;      /* [B][Hq][splits][D] */
} sy_attn_gpu_decode;

enum {
    SY_ATTN_DECODE_TILE = 64,   /* split spans are multiples of this */
    SY_ATTN_DECODE_HEADS = 8,   /* q heads a block serves (GH); larger GQA groups take several blocks */
    SY_ATTN_MAX_SPLITS = 1024
};

template <int LAYOUT, int KV, int GH, int DMAX>
struct sy_attn_decode_shape {
    /* 64 keys a tile, 32 where a 64-key K or V tile would pass 16 KB (f32 at head dim 128), so that
     * every instantiation stays within 48 KB of static shared memory. */
    static constexpr int NT = SY_ATTN_GPU_THREADS;
    static constexpr int TILE = DMAX * sy_elem_size<KV> > 256 ? 32 : SY_ATTN_DECODE_TILE;
    static constexpr int TPT = TILE / 32; /* QK tokens of a thread */
    static constexpr int DIMS = DMAX, GROUP = GH;
    static constexpr int ES = sy_elem_size<KV>, VEC = sy_elems16<KV>;
    static constexpr bool V5D = LAYOUT == SY_LAYOUT_VECTORIZED_5D;
    static constexpr int CPR = DMAX / VEC;     /* 16-byte chunks of a K row */
    static constexpr int K_ROW = DMAX * ES + 16; /* bytes of a K row in shared memory */
    static constexpr int V_ROW = V5D ? TILE * ES + 16 : K_ROW;
    static constexpr int V_ROWS = V5D ? DMAX : TILE;
    static constexpr int CHUNKS = TILE * CPR;  /* 16-byte pieces of one tensor's tile */
    static constexpr int PER_THREAD = 2 * CHUNKS / NT;
    static constexpr bool PREFETCH = PER_THREAD <= 8; /* 32 registers of staged pieces at most */
    static constexpr int BATCH = PREFETCH ? PER_THREAD : 8;
    static constexpr int HPT = GH / 4;   /* heads of a thread in QK and PV */
    static constexpr int DPT = DMAX / 32; /* dims of a thread in PV */
    static constexpr int SEG = NT / GH;   /* softmax threads per head */
    static constexpr int Q_ROW = DMAX + 4, P_ROW = TILE + 4;
    static_assert(CHUNKS % NT == 0 && PER_THREAD % BATCH == 0, "decode tile pieces per thread");
    static_assert(GH >= 4 && GH <= 16 && NT / 32 == 4, "decode thread tiles assume 4 slots of 32 threads");
    static_assert(SY_ATTN_DECODE_TILE % TILE == 0 && TILE / GH * GH == TILE, "tiles tile the split spans");
};

/* The keys [lo, hi) of one split: the context [start, len) (start > 0 with a window) cut into
 * TILE-aligned spans, so that no tile straddles two splits. */
SY_DEV void sy_attn_gpu_split_range(int64_t start, int64_t len, uint32_t split, uint32_t splits, int64_t *lo,
                                    int64_t *hi)
{
    /* Lengths are int32, so the one division by a runtime value can be 32-bit (a 64-bit one is a
     * long subroutine, and a short window call pays it in every item). */
    const int64_t base = start / SY_ATTN_DECODE_TILE * SY_ATTN_DECODE_TILE;
    uint32_t span = len > base ? ((uint32_t)(len - base) + splits - 1u) / splits : 0u;
    span = (span + SY_ATTN_DECODE_TILE - 1u) / SY_ATTN_DECODE_TILE * SY_ATTN_DECODE_TILE;
    const int64_t a = base + (int64_t)split * span, b = a + span;
    *lo = a > start ? a : start;
    *hi = b < len ? b : len;
}

/* What the tile loader needs of the block. */
typedef struct sy_attn_gpu_decode_span {
    const int32_t *table; /* the sequence's block table */
    uint32_t kv_head;
    int64_t lo, hi; /* the split's keys */
} sy_attn_gpu_decode_span;

/* One unit of decode work: the keys of one split of one sequence against a chunk of up to GH q
 * heads of one KV head. `row` numbers (KV head, chunk) pairs, head_chunks of them a KV head. */
typedef struct sy_attn_gpu_decode_item {
    uint32_t b, split;
    uint32_t g0, n_heads; /* the chunk's first q head within the group, and how many it has */
    uint32_t head0;       /* q head of g0 */
    sy_attn_gpu_decode_span sp;
} sy_attn_gpu_decode_item;

SY_DEV sy_attn_gpu_decode_item sy_attn_gpu_decode_item_of(const sy_attn_gpu_decode &p, uint32_t b, uint32_t split,
                                                          uint32_t row, uint32_t gh)
{
    sy_attn_gpu_decode_item it;
    it.b = b;
    it.split = split;
    const uint32_t kv_head = row / p.head_chunks;
    it.g0 = (row % p.head_chunks) * gh;
    it.n_heads = p.group - it.g0 < gh ? p.group - it.g0 : gh;
    it.head0 = kv_head * p.group + it.g0;
    const int64_t len = p.context_lens[(int64_t)b * p.cl_s0];
    const int64_t start = p.c.window > 0 && len > p.c.window ? len - p.c.window : 0;
    it.sp.table = p.block_tables + (int64_t)b * p.bt_s0;
    it.sp.kv_head = kv_head;
    sy_attn_gpu_split_range(start, len, split, p.num_splits, &it.sp.lo, &it.sp.hi);
    return it;
}

/* Where the tile at t0 starts in the K and V pools. When pages hold whole tiles (P a multiple of
 * TILE; tiles start on multiples of TILE) a tile is inside one page: one block-table read and one
 * row address a tile, and every piece is a fixed offset from it, which takes the page lookup and
 * the layout's divisions out of the per-piece work (they were most of the loader's instructions).
 * Otherwise (smaller pages) each piece finds its own page. */
typedef struct sy_attn_gpu_decode_tile {
    uint64_t k_base, v_base; /* element offsets of the tile's first key, head kv_head, dim 0 */
} sy_attn_gpu_decode_tile;

template <bool WHOLE>
SY_DEV sy_attn_gpu_decode_tile sy_attn_gpu_decode_tile_at(const sy_attn_gpu_decode &p,
                                                          const sy_attn_gpu_decode_span &sp, int64_t t0)
{
    sy_attn_gpu_decode_tile t = {0u, 0u};
    if (WHOLE || p.tiles_in_page) {
        const uint32_t P = p.dims.page_size, page = (uint32_t)sp.table[(uint32_t)t0 / P], off = (uint32_t)t0 % P;
        t.k_base = sy_kv_k_row_at(&p.dims, page, off, sp.kv_head).base;
        t.v_base = sy_kv_v_row_at(&p.dims, page, off, sp.kv_head).base;
    }
    return t;
}

/* Piece `id` of the tile at t0 (ids below CHUNKS are K, the rest V) from the pool; zero for keys
 * outside the split and dims past D. `tile` is sy_attn_gpu_decode_tile_at(t0). With whole tiles
 * in a page a piece is an offset from the tile's row (sy_kv_addr.h's formulas with the page fixed:
 * nhd token rows H*D apart; vectorized_5d K tokens X apart and runs P*X apart; vectorized_5d V
 * groups of X tokens D*X apart and dims X apart); otherwise it looks up its own page. WHOLE (see
 * sy_attn_gpu_decode_whole) leaves out everything a whole-tile, whole-chunk pool cannot need. */
template <class S, int LAYOUT, int KV, bool WHOLE>
SY_DEV uint4 sy_attn_gpu_decode_fetch(const sy_attn_gpu_decode &p, const sy_attn_gpu_decode_span &sp, int64_t t0,
                                      const sy_attn_gpu_decode_tile &tile, int id)
{
    const uint32_t D = WHOLE ? (uint32_t)S::DIMS : p.dims.head_dim, P = p.dims.page_size;
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    if (id < S::CHUNKS || !S::V5D) {
        const bool value = id >= S::CHUNKS;
        const int k = value ? id - S::CHUNKS : id;
        const int n = S::V5D ? k % S::TILE : k / S::CPR, c = S::V5D ? k / S::TILE : k % S::CPR;
        const int64_t pos = t0 + n;
        if (pos < sp.lo || pos >= sp.hi || (uint32_t)(c * S::VEC) >= D)
            return zero;
        uint64_t elem;
        if (WHOLE || p.tiles_in_page) {
            elem = (value ? tile.v_base : tile.k_base) +
                   (S::V5D ? (uint32_t)c * P * S::VEC + (uint32_t)n * S::VEC
                           : (uint32_t)n * p.dims.kv_heads * D + (uint32_t)c * S::VEC);
        } else {
            const uint32_t page = (uint32_t)sp.table[(uint32_t)pos / P], off = (uint32_t)pos % P;
            const sy_kv_row row = value ? sy_kv_v_row_at(&p.dims, page, off, sp.kv_head)
                                        : sy_kv_k_row_at(&p.dims, page, off, sp.kv_head);
            /* A chunk is one run of a vectorized_5d K row, or VEC consecutive elements of an nhd row. */
            elem = S::V5D ? row.base + (uint64_t)c * row.run_stride : row.base + (uint64_t)c * S::VEC;
        }
        if constexpr (WHOLE)
            return sy_ld_raw<16>((const char *)(value ? p.v_cache : p.k_cache) + elem * S::ES);
        const int n_valid = D - c * S::VEC < (uint32_t)S::VEC ? (int)(D - c * S::VEC) : S::VEC;
        return sy_attn_ld_chunk<KV>(value ? p.v_cache : p.k_cache, elem, n_valid, S::V5D || p.row_aligned);
    }
    /* vectorized_5d V: the vector of dim d for the X tokens of group gi. The X tokens share a page
     * (P % X == 0, and groups start on multiples of X). */
    const int k = id - S::CHUNKS, d = k % S::DIMS, gi = k / S::DIMS;
    const int64_t pos0 = t0 + (int64_t)gi * S::VEC;
    if ((uint32_t)d >= D || pos0 + S::VEC <= sp.lo || pos0 >= sp.hi)
        return zero;
    uint64_t elem;
    if (WHOLE || p.tiles_in_page) {
        elem = tile.v_base + (uint32_t)gi * D * S::VEC + (uint32_t)d * S::VEC;
    } else {
        const int64_t first = pos0 > sp.lo ? pos0 : sp.lo;
        const uint32_t page = (uint32_t)sp.table[(uint32_t)first / P];
        elem = sy_kv_v_row_at(&p.dims, page, (uint32_t)pos0 % P, sp.kv_head).base + (uint64_t)d * S::VEC;
    }
    const uint4 raw = sy_ld_raw<16>((const char *)p.v_cache + elem * S::ES);
    return sy_keep_elems<KV>(raw, (int)(sp.lo - pos0), (int)(sp.hi - pos0));
}

/* Piece `id` of the tile into shared memory, where the compute phases expect it. */
template <class S>
SY_DEV void sy_attn_gpu_decode_put(unsigned char *k_tile, unsigned char *v_tile, int id, const uint4 &raw)
{
    const int k = id < S::CHUNKS ? id : id - S::CHUNKS;
    unsigned char *dst;
    if (id < S::CHUNKS)
        dst = S::V5D ? k_tile + (k % S::TILE) * S::K_ROW + (k / S::TILE) * 16 : k_tile + (k / S::CPR) * S::K_ROW + (k % S::CPR) * 16;
    else
        dst = S::V5D ? v_tile + (k % S::DIMS) * S::V_ROW + (k / S::DIMS) * 16 : v_tile + (k / S::CPR) * S::V_ROW + (k % S::CPR) * 16;
    sy_st_raw<16>(dst, raw);
}

/* What the kernel keeps when the products run on CUDA cores. */
struct sy_attn_decode_no_mma {
};

/* The tensor-core kernels of head dim 64: at most 128 registers, so that 4 blocks share a
 * multiprocessor (both paths of the tile loader in one kernel would otherwise take more in some
 * instantiations). */
#if defined(SY_VENDOR_CUDA)
#define SY_ATTN_DECODE_MIN_BLOCKS(dmax, mma) ((mma) && (dmax) == 64 ? 4 : 1)
#else
#define SY_ATTN_DECODE_MIN_BLOCKS(dmax, mma) 1
#endif

template <int LAYOUT, int KV, int GH, int DMAX, bool MMA, bool WHOLE>
static __global__ __launch_bounds__(SY_ATTN_GPU_THREADS, SY_ATTN_DECODE_MIN_BLOCKS(DMAX, MMA)) void
sy_attn_gpu_decode_kernel(const sy_attn_gpu_decode p)
{
    using S = sy_attn_decode_shape<LAYOUT, KV, GH, DMAX>;
#if SY_ATTN_DECODE_TENSOR_CORES
    using Mma = std::conditional_t<MMA, sy_attn_mma_decode<S, KV>, sy_attn_decode_no_mma>;
#else
    static_assert(!MMA, "tensor-core decode is CUDA only");
    using Mma = sy_attn_decode_no_mma;
#endif
    Mma mma;
    (void)mma;
    __shared__ __align__(16) unsigned char k_tile[S::TILE * S::K_ROW];
    __shared__ __align__(16) unsigned char v_tile[S::V_ROWS * S::V_ROW];
    __shared__ __align__(16) float q_s[GH * S::Q_ROW];
    __shared__ __align__(16) float p_s[GH * S::P_ROW];
    __shared__ float m_s[GH], l_s[GH], alpha_s[GH];

    const int tid = (int)threadIdx.x;
    const sy_attn_gpu_decode_item it = sy_attn_gpu_decode_item_of(p, blockIdx.z, blockIdx.x, blockIdx.y, GH);
    const uint32_t b = it.b, split = it.split, n_heads = it.n_heads, head0 = it.head0, D = p.dims.head_dim;
    const sy_attn_gpu_decode_span sp = it.sp;

    for (int i = tid; i < GH * DMAX; i += S::NT) {
        const uint32_t g = (uint32_t)i / DMAX, d = (uint32_t)i % DMAX;
        q_s[g * S::Q_ROW + d] = g < n_heads && d < D
                                    ? sy_gpu_load_act(p.c.q, p.c.io_dtype, (int64_t)b * p.c.q_s0 + (int64_t)(head0 + g) * p.c.q_s1 + d)
                                    : 0.0f;
    }
    if (tid < GH) {
        m_s[tid] = -INFINITY;
        l_s[tid] = 0.0f;
    }

    /* thread slots: QK tokens ts and ts + 32, PV dims of slot ds; heads hs * HPT .. + HPT - 1 */
    const int ts = tid % 32, hs = tid / 32;
    float acc[S::HPT][S::DPT];
#pragma unroll
    for (int hh = 0; hh < S::HPT; hh++)
#pragma unroll
        for (int j = 0; j < S::DPT; j++)
            acc[hh][j] = 0.0f;

    const int64_t first = sp.lo / S::TILE * S::TILE;
    uint4 staged[S::BATCH];
    if (S::PREFETCH && sp.lo < sp.hi) {
        const sy_attn_gpu_decode_tile tile = sy_attn_gpu_decode_tile_at<WHOLE>(p, sp, first);
#pragma unroll
        for (int i = 0; i < S::BATCH; i++)
            staged[i] = sy_attn_gpu_decode_fetch<S, LAYOUT, KV, WHOLE>(p, sp, first, tile, tid + S::NT * i);
    }
    const int chunks = (int)((D + S::VEC - 1) / S::VEC);
    __syncthreads();
#if SY_ATTN_DECODE_TENSOR_CORES
    if constexpr (MMA)
        mma.start(q_s);
#endif
    for (int64_t t0 = first; t0 < sp.hi; t0 += S::TILE) {
        if (S::PREFETCH) {
#pragma unroll
            for (int i = 0; i < S::BATCH; i++)
                sy_attn_gpu_decode_put<S>(k_tile, v_tile, tid + S::NT * i, staged[i]);
            __syncthreads();
            if (t0 + S::TILE < sp.hi) {
                const sy_attn_gpu_decode_tile tile = sy_attn_gpu_decode_tile_at<WHOLE>(p, sp, t0 + S::TILE);
#pragma unroll
                for (int i = 0; i < S::BATCH; i++)
                    staged[i] =
                        sy_attn_gpu_decode_fetch<S, LAYOUT, KV, WHOLE>(p, sp, t0 + S::TILE, tile, tid + S::NT * i);
            }
        } else {
            const sy_attn_gpu_decode_tile tile = sy_attn_gpu_decode_tile_at<WHOLE>(p, sp, t0);
#pragma unroll
            for (int b0 = 0; b0 < S::PER_THREAD; b0 += S::BATCH) {
#pragma unroll
                for (int i = 0; i < S::BATCH; i++)
                    staged[i] = sy_attn_gpu_decode_fetch<S, LAYOUT, KV, WHOLE>(p, sp, t0, tile, tid + S::NT * (b0 + i));
#pragma unroll
                for (int i = 0; i < S::BATCH; i++)
                    sy_attn_gpu_decode_put<S>(k_tile, v_tile, tid + S::NT * (b0 + i), staged[i]);
            }
            __syncthreads();
        }

        /* QK: scores of tokens ts + 32 t for this thread's heads. */
#if SY_ATTN_DECODE_TENSOR_CORES
        if constexpr (MMA)
            mma.qk(k_tile, p_s, t0, sp.lo, sp.hi, p.c.score_scale);
        else
#endif
        {
            float sc[S::TPT][S::HPT];
#pragma unroll
            for (int t = 0; t < S::TPT; t++)
#pragma unroll
                for (int hh = 0; hh < S::HPT; hh++)
                    sc[t][hh] = 0.0f;
            for (int c = 0; c < chunks; c++) {
                uint4 raw[S::TPT];
#pragma unroll
                for (int t = 0; t < S::TPT; t++)
                    raw[t] = sy_ld_raw<16>(k_tile + (ts + 32 * t) * S::K_ROW + c * 16);
#pragma unroll
                for (int q4 = 0; q4 < S::VEC / 4; q4++) {
                    float x[S::TPT][4];
#pragma unroll
                    for (int t = 0; t < S::TPT; t++)
                        sy_unpack4<KV>(raw[t], q4, x[t]);
#pragma unroll
                    for (int hh = 0; hh < S::HPT; hh++) {
                        const float4 qv = *(const float4 *)&q_s[(hs * S::HPT + hh) * S::Q_ROW + c * S::VEC + q4 * 4];
#pragma unroll
                        for (int t = 0; t < S::TPT; t++)
                            sc[t][hh] = sy_dot4(sc[t][hh], qv, x[t]);
                    }
                }
            }
#pragma unroll
            for (int t = 0; t < S::TPT; t++) {
                const int64_t pos = t0 + ts + 32 * t;
                const bool in = pos >= sp.lo && pos < sp.hi;
#pragma unroll
                for (int hh = 0; hh < S::HPT; hh++)
                    p_s[(hs * S::HPT + hh) * S::P_ROW + ts + 32 * t] = in ? sc[t][hh] * p.c.score_scale : -INFINITY;
            }
        }
        __syncthreads();
        {
            const int g = tid / S::SEG, lane = tid % S::SEG;
            sy_attn_gpu_softmax_step<S::SEG, S::TILE / S::SEG>(&p_s[g * S::P_ROW], S::TILE, lane, &m_s[g], &l_s[g],
                                                               &alpha_s[g]);
        }
        __syncthreads();

        /* PV: acc[hh][j] of dim d_j += p[n] v[n][d_j] over the tile. */
#if SY_ATTN_DECODE_TENSOR_CORES
        if constexpr (MMA)
            mma.pv(v_tile, p_s, alpha_s);
        else
#endif
        {
#pragma unroll
            for (int hh = 0; hh < S::HPT; hh++) {
                const float a = alpha_s[hs * S::HPT + hh];
#pragma unroll
                for (int j = 0; j < S::DPT; j++)
                    acc[hh][j] *= a;
            }
            if constexpr (S::V5D) {
                for (int n0 = 0; n0 < S::TILE; n0 += S::VEC) {
                    uint4 raw[S::DPT];
#pragma unroll
                    for (int j = 0; j < S::DPT; j++)
                        raw[j] = sy_ld_raw<16>(v_tile + (ts + 32 * j) * S::V_ROW + n0 * S::ES);
#pragma unroll
                    for (int q4 = 0; q4 < S::VEC / 4; q4++) {
                        float4 pv[S::HPT];
#pragma unroll
                        for (int hh = 0; hh < S::HPT; hh++)
                            pv[hh] = *(const float4 *)&p_s[(hs * S::HPT + hh) * S::P_ROW + n0 + q4 * 4];
#pragma unroll
                        for (int j = 0; j < S::DPT; j++) {
                            float v4[4];
                            sy_unpack4<KV>(raw[j], q4, v4);
#pragma unroll
                            for (int hh = 0; hh < S::HPT; hh++)
                                acc[hh][j] = sy_dot4(acc[hh][j], pv[hh], v4);
                        }
                    }
                }
            } else {
                for (int n0 = 0; n0 < S::TILE; n0 += 4) {
                    float4 pv[S::HPT];
#pragma unroll
                    for (int hh = 0; hh < S::HPT; hh++)
                        pv[hh] = *(const float4 *)&p_s[(hs * S::HPT + hh) * S::P_ROW + n0];
#pragma unroll
                    for (int nn = 0; nn < 4; nn++) {
                        float v[S::DPT];
                        sy_ld_decode<KV, S::DPT>(v_tile + (n0 + nn) * S::V_ROW + ts * S::DPT * S::ES, v);
#pragma unroll
                        for (int hh = 0; hh < S::HPT; hh++) {
                            const float w = nn == 0 ? pv[hh].x : nn == 1 ? pv[hh].y : nn == 2 ? pv[hh].z : pv[hh].w;
#pragma unroll
                            for (int j = 0; j < S::DPT; j++)
                                acc[hh][j] = fmaf(w, v[j], acc[hh][j]);
                        }
                    }
                }
            }
        }
        __syncthreads();
    }

    /* Output (one split) or the split's partial: dim d of the block's head g. */
    const uint32_t Hq = p.dims.kv_heads * p.group;
    const auto emit = [&](uint32_t g, uint32_t d, float value) {
        if (g >= n_heads || d >= D)
            return;
        const uint32_t head = head0 + g;
        if (p.num_splits == 1) {
            const float *sink = p.c.sinks ? &p.c.sinks[(int64_t)head * p.c.sinks_s0] : NULL;
            sy_gpu_store_act(p.c.out, p.c.io_dtype, (int64_t)b * p.c.out_s0 + (int64_t)head * p.c.out_s1 + d,
                             sy_attn_gpu_finish(m_s[g], l_s[g], value, sink) * p.c.out_scale);
        } else {
            p.part_acc[(((uint64_t)b * Hq + head) * p.num_splits + split) * D + d] = value;
        }
    };
#if SY_ATTN_DECODE_TENSOR_CORES
    if constexpr (MMA)
        mma.each_output(emit);
    else
#endif
    {
#pragma unroll
        for (int hh = 0; hh < S::HPT; hh++)
#pragma unroll
            for (int j = 0; j < S::DPT; j++)
                emit(hs * S::HPT + hh, S::V5D ? ts + 32 * j : ts * S::DPT + j, acc[hh][j]);
    }
    if (p.num_splits > 1 && tid < (int)n_heads) {
        const uint64_t part = ((uint64_t)b * Hq + head0 + tid) * p.num_splits + split;
        p.part_ml[2 * part] = m_s[tid];
        p.part_ml[2 * part + 1] = l_s[tid];
    }
}

/* Splits of one (sequence, q head) combined by log-sum-exp (sy_attn_cpu_combine), the sink in the
 * denominator only; one block per (q head, sequence). The weighted sum of each dim is spread over
 * blockDim / D groups of threads, a thread taking splits grp, grp + groups, ... into 4 independent
 * sums. The partials sit in L2, written by the decode kernel just before, so what the combine costs
 * is its round trips to L2: every load a thread needs (its first SY_ATTN_COMBINE_BATCH splits' dims,
 * the splits' m and l, the sink) goes out at once, before the reductions that need the first of
 * them. Loading each split only after its weight was known took 4 splits a round trip, 8 round
 * trips for the 61 splits of 1 x 32768 (H200, ncu with a cold L2: 7.8-8.9 us, now 6.2-6.8 us; the
 * timed call 31.9 -> 31.6 us, and 29.5 us with the launch overlapped, SY_GPU_LAUNCH_CHAINED).
 * A split whose l is 0 (no key of it visible) has weight 0 and its partial, never written, is not
 * added: selected, not multiplied, since the unwritten memory may hold a NaN. */
enum { SY_ATTN_COMBINE_BATCH = 32 };

static __global__ __launch_bounds__(SY_ATTN_GPU_THREADS) void sy_attn_gpu_combine_kernel(const sy_attn_gpu_decode p)
{
    __shared__ float w_s[SY_ATTN_MAX_SPLITS];
    __shared__ float scratch[SY_MAX_WARPS_PER_BLOCK];
    __shared__ float group_sums[SY_ATTN_GPU_THREADS];
    sy_gpu_wait_for_previous_kernel();
    const uint32_t head = blockIdx.x, b = blockIdx.y, S = p.num_splits, D = p.dims.head_dim;
    const uint32_t Hq = p.dims.kv_heads * p.group;
    const uint64_t base = ((uint64_t)b * Hq + head) * S;
    /* D <= SY_ATTN_GPU_HEAD_DIM_MAX = blockDim.x: at least one group. */
    const uint32_t groups = blockDim.x / D, grp = threadIdx.x / D, d = threadIdx.x % D;
    const uint32_t mine = grp < groups && grp < S ? (S - grp + groups - 1) / groups : 0;
    const float *acc = p.part_acc + base * D + d;
    float batch[SY_ATTN_COMBINE_BATCH];
#pragma unroll
    for (uint32_t n = 0; n < SY_ATTN_COMBINE_BATCH; n++)
        batch[n] = n < mine ? acc[(uint64_t)(grp + n * groups) * D] : 0.0f;
    const float *sink = p.c.sinks ? &p.c.sinks[(int64_t)head * p.c.sinks_s0] : NULL;
    const float sink_logit = sink ? *sink : -INFINITY;
    float M = -INFINITY;
    for (uint32_t i = threadIdx.x; i < S; i += blockDim.x) {
        const float2 ml = *(const float2 *)&p.part_ml[2 * (base + i)];
        if (ml.y > 0.0f)
            M = fmaxf(M, ml.x);
    }
    M = fmaxf(sy_block_max(M, scratch), sink_logit);
    float den = 0.0f;
    for (uint32_t i = threadIdx.x; i < S; i += blockDim.x) {
        const float2 ml = *(const float2 *)&p.part_ml[2 * (base + i)];
        const float w = ml.y > 0.0f && M != -INFINITY ? expf(ml.x - M) : 0.0f;
        w_s[i] = w;
        den += w * ml.y;
    }
    den = sy_block_sum(den, scratch);
    if (sink && M != -INFINITY)
        den += expf(sink_logit - M);
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const uint32_t quads = mine / 4 * 4; /* splits past the last whole quad go to part[0] */
    for (uint32_t n0 = 0; n0 < mine; n0 += SY_ATTN_COMBINE_BATCH) {
        if (n0 > 0)
#pragma unroll
            for (uint32_t n = 0; n < SY_ATTN_COMBINE_BATCH; n++)
                batch[n] = n0 + n < mine ? acc[(uint64_t)(grp + (n0 + n) * groups) * D] : 0.0f;
#pragma unroll
        for (uint32_t n = 0; n < SY_ATTN_COMBINE_BATCH; n++) {
            const uint32_t k = n0 + n;
            const float w = k < mine ? w_s[grp + k * groups] : 0.0f;
            if (w > 0.0f)
                part[k < quads ? n % 4 : 0] += w * batch[n];
        }
    }
    group_sums[threadIdx.x] = M != -INFINITY ? (part[0] + part[1]) + (part[2] + part[3]) : 0.0f;
    __syncthreads();
    if (grp == 0) {
        float o = 0.0f;
        if (M != -INFINITY) {
            for (uint32_t g = 0; g < groups; g++)
                o += group_sums[g * D + d];
            o = o / den * p.c.out_scale;
        }
        sy_gpu_store_act(p.c.out, p.c.io_dtype, (int64_t)b * p.c.out_s0 + (int64_t)head * p.c.out_s1 + d, o);
    }
}

/* Whether every tile of the call lies in one page and every 16-byte piece of a row is whole and
 * aligned (the head dim is the kernel's DMAX): the loader then needs no per-piece page lookup, no
 * partial pieces and no element-wise loads, and the kernel is instantiated without them. */
static inline bool sy_attn_gpu_decode_whole(const sy_attn_gpu_decode &p, int dmax)
{
    return p.tiles_in_page && p.row_aligned && p.dims.head_dim == (uint32_t)dmax;
}

template <int LAYOUT, int KV, int DMAX>
static void sy_attn_gpu_decode_launch_dim(const sy_attn_gpu_decode &p, dim3 grid, gpuStream_t stream)
{
    constexpr bool mma = SY_ATTN_DECODE_TENSOR_CORES && KV != SY_DTYPE_F32;
    if (sy_attn_gpu_decode_whole(p, DMAX))
        SY_GPU_LAUNCH(grid, SY_ATTN_GPU_THREADS, 0, stream,
                      sy_attn_gpu_decode_kernel<LAYOUT, KV, SY_ATTN_DECODE_HEADS, DMAX, mma, true>)(p);
    else
        SY_GPU_LAUNCH(grid, SY_ATTN_GPU_THREADS, 0, stream,
                      sy_attn_gpu_decode_kernel<LAYOUT, KV, SY_ATTN_DECODE_HEADS, DMAX, mma, false>)(p);
}

/* Launches the decode kernel for (layout, KV dtype, dmax 64 or 128), GH = 8 q heads a block, the
 * products on tensor cores where they can be. */
template <int LAYOUT, int KV>
static void sy_attn_gpu_decode_launch_kv(const sy_attn_gpu_decode &p, int dmax, dim3 grid, gpuStream_t stream)
{
    if (dmax == 64)
        sy_attn_gpu_decode_launch_dim<LAYOUT, KV, 64>(p, grid, stream);
    else
        sy_attn_gpu_decode_launch_dim<LAYOUT, KV, 128>(p, grid, stream);
}

template <int LAYOUT>
static void sy_attn_gpu_decode_launch_layout(const sy_attn_gpu_decode &p, int32_t kv_dtype, int dmax, dim3 grid,
                                             gpuStream_t stream)
{
    if (kv_dtype == SY_DTYPE_F32)
        sy_attn_gpu_decode_launch_kv<LAYOUT, SY_DTYPE_F32>(p, dmax, grid, stream);
    else if (kv_dtype == SY_DTYPE_BF16)
        sy_attn_gpu_decode_launch_kv<LAYOUT, SY_DTYPE_BF16>(p, dmax, grid, stream);
    else
        sy_attn_gpu_decode_launch_kv<LAYOUT, SY_DTYPE_FP8_E4M3>(p, dmax, grid, stream);
}

/* grid (splits, Hkv x head chunks, B). */
static inline void sy_attn_gpu_decode_launch(const sy_attn_gpu_decode &p, int32_t kv_dtype, int dmax, dim3 grid,
                                             gpuStream_t stream)
{
    if (p.dims.layout == SY_LAYOUT_VECTORIZED_5D)
        sy_attn_gpu_decode_launch_layout<SY_LAYOUT_VECTORIZED_5D>(p, kv_dtype, dmax, grid, stream);
    else
        sy_attn_gpu_decode_launch_layout<SY_LAYOUT_NHD>(p, kv_dtype, dmax, grid, stream);
}

#if SY_ATTN_DECODE_WARP_KERNEL
#include "attn_decode_gpu_warp.cuh"
#endif

#endif
