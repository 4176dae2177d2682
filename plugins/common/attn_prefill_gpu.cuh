/* Prefill attention on the GPU over contiguous ragged K/V (attention.prefill_linear): causal with
 * the prefix convention (query i of a sequence with Lq queries and Lk keys sits at Lk - Lq + i),
 * sliding window (W keys including the query's own), sinks, fp8 K/V with per-tensor scales, GQA.
 *
 * A tiled flash-attention kernel: a block owns R rows (queries x q heads of one KV head, R = 2048 /
 * DMAX) and walks key tiles of KT keys (KT sized so that K and V tiles stay near 20 KB of shared
 * memory), keeping each row's (m, l, acc) across tiles with the online softmax of
 * attn_core_gpu.cuh; each K/V tile is loaded once for all R rows, with 16-byte loads where the rows
 * allow and the next tile's loads in flight while the current one is computed. Query tiles of a
 * ragged batch: the grid covers sum ceil(Lq / queries per block) <= Tq / bq + B tiles, and each
 * block finds its sequence with one warp's scan of cu_seqlens_q (sy_attn_gpu_prefill_find).
 *
 * CUDA cores, f32 accumulation: every K/V dtype and alignment, and the HIP build. CUDA builds (and
 * tests/gpu's emulator at warp 32) run bf16 K/V with aligned rows on tensor cores instead
 * (attn_prefill_gpu_mma.cuh, which shares the query tiles above and the finish). */
#ifndef SY_ATTN_PREFILL_GPU_CUH
#define SY_ATTN_PREFILL_GPU_CUH

#include "attn_core_gpu.cuh"
#include "sy_fast_div.h"
#include "sy_kv_addr.h"

typedef struct sy_attn_gpu_prefill {
    sy_attn_gpu_call c;
    const void *k, *v;
    int64_t k_s0, k_s1, v_s0, v_s1;
    uint32_t k_aligned, v_aligned; /* 16-byte aligned pointer, strides and row length */
    uint32_t q_vec;                /* q's pointer and strides: 16-byte aligned */
    uint32_t tma_tiles;            /* the tensor-core kernel's whole K/V tiles come by TMA (its maps beside p) */
    int64_t k_rows;                /* rows of k and v (prefill_linear), slots of the pool (prefill_paged) */
    uint32_t out_pairs;            /* out's pointer and strides: aligned to two elements */
    const int32_t *cu_q, *cu_k;
    /* prefill_paged (block_tables != NULL; cu_k, k_s0 .. v_s1 unused): sequence b's keys are
     * positions 0 .. context_lens[b] - 1 of the pages in row b of block_tables, in the pool's
     * layout (sy_kv_addr.h); only keys from the block's first query's window start on are read
     * (a sliding-window table holds 0 for freed pages), the rest of a tile is zeros. */
    const int32_t *block_tables, *context_lens;
    int64_t bt_s0;
    sy_kv_dims dims;
    sy_fast_div page_div; /* P */
    uint32_t batch;
    int32_t causal;
    uint32_t kv_heads, group, head_dim;
    /* as divisors (sy_fast_div.h): rows and head slots are split by them */
    sy_fast_div heads_per_block;   /* q heads of one KV head in a block: min(group, R) */
    sy_fast_div queries_per_block; /* R / heads_per_block */
    sy_fast_div head_chunks;       /* ceil(group / heads_per_block) */
} sy_attn_gpu_prefill;

/* Where a block works: its query tile's sequence (first q and K/V rows, queries, keys), the tile's
 * first query, and its head slot (KV head h, q heads g0 .. g0 + heads_per_block - 1 of h's group). */
typedef struct sy_attn_gpu_prefill_place {
    int64_t q_row0, lq, k_row0, lk;
    uint32_t seq, i0, h, g0;
} sy_attn_gpu_prefill_place;

constexpr int sy_floor_pow2(int x)
{
    return x < 2 ? 1 : 2 * sy_floor_pow2(x / 2);
}

template <int KV, int DMAX>
struct sy_attn_prefill_shape {
    static constexpr int NT = SY_ATTN_GPU_THREADS;
    static constexpr int ES = sy_elem_size<KV>, VEC = sy_elems16<KV>;
    static constexpr int R = 2048 / DMAX; /* rows of a block */
    static constexpr int K_ROW = DMAX * ES + 16;
    static constexpr int KT_FIT = sy_floor_pow2(20480 / (2 * K_ROW));
    static constexpr int KT = KT_FIT > 64 ? 64 : KT_FIT; /* keys of a tile */
    static constexpr int CPR = DMAX / VEC;
    static constexpr int CHUNKS = KT * CPR; /* 16-byte pieces of one tensor's tile */
    static constexpr int PER_THREAD = 2 * CHUNKS / NT;
    static constexpr int Q_ROW = DMAX + 4, P_ROW = KT + 4;
    /* QK: 8 row slots x 16 key slots; softmax: NT / R threads a row; PV: 4 row slots x 32 dim slots */
    static constexpr int RPT = R / 8, KPT = KT >= 16 ? KT / 16 : 1;
    static constexpr int TPR = NT / R, SPT = (KT + TPR - 1) / TPR;
    static constexpr int RPV = R / 4, DPT = DMAX / 32;
    static_assert(CHUNKS % NT == 0 && PER_THREAD <= 16 && KT >= 8, "prefill tile pieces per thread");
    static_assert(R >= 8 && TPR <= 32, "prefill thread tiles");
};

/* The block's place. Blocks are handed out in linear order (x fastest), and that order walks the
 * head slots fastest and the query tiles from the last: a causal sequence's longest tiles start
 * first and its shortest fill the tail, instead of the longest starting last and running alone.
 * Query tile t lies in sequence b with tiles_before(b) <= t < tiles_before(b + 1), tiles(b) =
 * ceil(Lq_b / queries_per_block): the first warp finds b, each lane counting the tiles of its share
 * of the batch and an exclusive scan over the lanes (xor butterflies) giving each share's first
 * tile, and the lane whose share holds t publishes the place; one barrier in all. (A block-wide scan
 * took 16 barriers and read cu_seqlens three times, each read waiting for the one before, before
 * the first K/V copy could be addressed.) Returns false (for the whole block) past the last tile. */
SY_DEV bool sy_attn_gpu_prefill_find(const sy_attn_gpu_prefill &p, sy_attn_gpu_prefill_place *place)
{
    __shared__ sy_attn_gpu_prefill_place found;
    __shared__ uint32_t tiles_total;
    const uint32_t linear = blockIdx.x + gridDim.x * blockIdx.y, slot = linear % gridDim.y;
    const uint32_t tile = gridDim.x - 1 - linear / gridDim.y;
    if (threadIdx.x < SY_WARP_SIZE) {
        const uint32_t lane = threadIdx.x, per = (p.batch + SY_WARP_SIZE - 1) / SY_WARP_SIZE;
        const uint32_t b_lo = lane * per < p.batch ? lane * per : p.batch;
        const uint32_t b_hi = b_lo + per < p.batch ? b_lo + per : p.batch;
        const auto tiles_of = [&](uint32_t b) {
            const uint32_t lq = (uint32_t)(p.cu_q[b + 1] - p.cu_q[b]);
            return lq == 0 ? 0u : sy_fast_div_quot(p.queries_per_block, lq - 1u) + 1u;
        };
        uint32_t count = 0;
        for (uint32_t b = b_lo; b < b_hi; b++)
            count += tiles_of(b);
        /* after the step of lane bit m, `group` sums the lanes that agree with this one above bit
         * m, and `below` the lanes of that group under this one */
        uint32_t group = count, below = 0;
        for (int m = 1; m < SY_WARP_SIZE; m *= 2) {
            const uint32_t other = sy_shfl_xor(group, m);
            if (lane & (uint32_t)m)
                below += other;
            group += other;
        }
        if (lane == 0)
            tiles_total = group;
        if (tile >= below && tile - below < count) {
            uint32_t b = b_lo, at = below;
            for (uint32_t n = tiles_of(b); tile - at >= n; n = tiles_of(++b))
                at += n;
            found.q_row0 = p.cu_q[b];
            found.lq = p.cu_q[b + 1] - found.q_row0;
            found.seq = b;
            found.k_row0 = p.block_tables ? 0 : p.cu_k[b];
            found.lk = p.block_tables ? p.context_lens[b] : p.cu_k[b + 1] - found.k_row0;
            found.i0 = (tile - at) * p.queries_per_block.divisor;
        }
    }
    __syncthreads();
    if (tile >= tiles_total)
        return false;
    *place = found;
    place->h = sy_fast_div_quot(p.head_chunks, slot);
    place->g0 = (slot - place->h * p.head_chunks.divisor) * p.heads_per_block.divisor;
    return true;
}

/* Row r of a block: query i0 + *qi of its sequence, q head g0 + *gi of its group; whether that is a
 * row of the call (a block's last rows may be past the sequence or the group). */
SY_DEV bool sy_attn_gpu_prefill_row(const sy_attn_gpu_prefill &p, const sy_attn_gpu_prefill_place &at, uint32_t r,
                                    uint32_t *qi, uint32_t *gi)
{
    *qi = sy_fast_div_quot(p.heads_per_block, r);
    *gi = r - *qi * p.heads_per_block.divisor;
    return *qi < p.queries_per_block.divisor && (int64_t)at.i0 + *qi < at.lq && at.g0 + *gi < p.group;
}

/* The keys [lo, hi) of query i of the block's sequence (the prefix convention: it sits at key
 * Lk - Lq + i); both ends grow with i. */
SY_DEV void sy_attn_gpu_prefill_keys(const sy_attn_gpu_prefill &p, const sy_attn_gpu_prefill_place &at, int64_t i,
                                     int64_t *lo, int64_t *hi)
{
    const int64_t pos = at.lk - at.lq + i;
    *hi = p.causal || p.c.window > 0 ? pos + 1 : at.lk;
    *lo = p.c.window > 0 && pos + 1 > p.c.window ? pos + 1 - p.c.window : 0;
}

/* The union [span_lo, span_hi) and the intersection [inner_lo, inner_hi) of the key ranges of the
 * block's queries: as both ends grow with the query, its first and last queries' ends. Every query
 * of the tile has rows of the call (head g0 is in the group). */
SY_DEV void sy_attn_gpu_prefill_span(const sy_attn_gpu_prefill &p, const sy_attn_gpu_prefill_place &at, int64_t *span_lo,
                                     int64_t *span_hi, int64_t *inner_lo, int64_t *inner_hi)
{
    const int64_t end = (int64_t)at.i0 + p.queries_per_block.divisor;
    sy_attn_gpu_prefill_keys(p, at, at.i0, span_lo, inner_hi);
    sy_attn_gpu_prefill_keys(p, at, (end < at.lq ? end : at.lq) - 1, inner_lo, span_hi);
}

/* Whether a paged call's V tile arrives transposed: vectorized_5d stores X consecutive tokens of
 * one dim in a 16-byte vector, so a piece is (dim, X keys) instead of (key, X dims). */
SY_DEV bool sy_attn_gpu_prefill_v_transposed(const sy_attn_gpu_prefill &p)
{
    return p.block_tables && p.dims.layout == SY_LAYOUT_VECTORIZED_5D;
}

/* Element offset in the pool of dim d of key `key` of the block's sequence (K, or V when value). */
SY_DEV uint64_t sy_attn_gpu_prefill_paged_elem(const sy_attn_gpu_prefill &p, const sy_attn_gpu_prefill_place &at,
                                               uint32_t h, int64_t key, uint32_t d, bool value)
{
    const uint32_t P = p.dims.page_size;
    const uint64_t page = (uint64_t)p.block_tables[(int64_t)at.seq * p.bt_s0 + key / P], off = (uint64_t)(key % P);
    const sy_kv_row r = value ? sy_kv_v_row_at(&p.dims, page, off, h) : sy_kv_k_row_at(&p.dims, page, off, h);
    return sy_kv_row_elem(&r, d);
}

/* Piece `id` of the K (ids below CHUNKS) or V tile of keys [t0, t0 + KT): keys from `lo` on and
 * below lk, zeros elsewhere. A transposed V piece (sy_attn_gpu_prefill_v_transposed) is dim
 * id / GROUPS, keys t0 + VEC (id % GROUPS) ..; every other piece key t0 + id / CPR, dims VEC (id %
 * CPR) .. */
template <class S, int KV>
SY_DEV uint4 sy_attn_gpu_prefill_fetch(const sy_attn_gpu_prefill &p, const sy_attn_gpu_prefill_place &at, uint32_t h,
                                       int64_t lo, int64_t t0, int id)
{
    const bool value = id >= S::CHUNKS;
    const int k = value ? id - S::CHUNKS : id;
    const int64_t lk = at.lk;
    if (value && sy_attn_gpu_prefill_v_transposed(p)) {
        constexpr int GROUPS = S::KT / S::VEC;
        const uint32_t d = (uint32_t)(k / GROUPS);
        const int64_t key = t0 + (int64_t)S::VEC * (k % GROUPS);
        if (d >= p.head_dim || key >= lk || key + S::VEC <= lo)
            return make_uint4(0u, 0u, 0u, 0u);
        /* the X keys of a piece share a page (X divides P); past lk they are zeros */
        const int n_valid = lk - key < S::VEC ? (int)(lk - key) : S::VEC;
        return sy_attn_ld_chunk<KV>(p.v, sy_attn_gpu_prefill_paged_elem(p, at, h, key, d, true), n_valid, true);
    }
    const int n = k / S::CPR, c = k % S::CPR;
    const int64_t key = t0 + n;
    if (key >= lk || key < lo || (uint32_t)(c * S::VEC) >= p.head_dim)
        return make_uint4(0u, 0u, 0u, 0u);
    const int n_valid = p.head_dim - c * S::VEC < (uint32_t)S::VEC ? (int)(p.head_dim - c * S::VEC) : S::VEC;
    if (p.block_tables)
        return sy_attn_ld_chunk<KV>(value ? p.v : p.k, sy_attn_gpu_prefill_paged_elem(p, at, h, key, c * S::VEC, value),
                                    n_valid, true);
    const int64_t s0 = value ? p.v_s0 : p.k_s0, s1 = value ? p.v_s1 : p.k_s1;
    const uint64_t elem = (uint64_t)((at.k_row0 + key) * s0 + (int64_t)h * s1) + (uint64_t)c * S::VEC;
    return sy_attn_ld_chunk<KV>(value ? p.v : p.k, elem, n_valid, value ? p.v_aligned : p.k_aligned);
}

/* Stores piece `id` (as sy_attn_gpu_prefill_fetch numbers them) into the [key][dim] K and V tiles. */
template <class S, int KV>
SY_DEV void sy_attn_gpu_prefill_store(const sy_attn_gpu_prefill &p, unsigned char *k_tile, unsigned char *v_tile, int id,
                                      const uint4 &piece)
{
    const int k = id < S::CHUNKS ? id : id - S::CHUNKS;
    if (id >= S::CHUNKS && sy_attn_gpu_prefill_v_transposed(p)) {
        constexpr int GROUPS = S::KT / S::VEC;
        const int d = k / GROUPS, key0 = S::VEC * (k % GROUPS);
#pragma unroll
        for (int e = 0; e < S::VEC; e++) {
            const int w = e * S::ES / 4, shift = 8 * ((e * S::ES) % 4);
            sy_st_elem_raw<KV>(v_tile + (key0 + e) * S::K_ROW, (uint64_t)d, sy_word(piece, w) >> shift);
        }
        return;
    }
    unsigned char *tile = id < S::CHUNKS ? k_tile : v_tile;
    sy_st_raw<16>(tile + (k / S::CPR) * S::K_ROW + (k % S::CPR) * 16, piece);
}

template <int KV, int DMAX>
static __global__ __launch_bounds__(SY_ATTN_GPU_THREADS) void sy_attn_gpu_prefill_kernel(const sy_attn_gpu_prefill p)
{
    using S = sy_attn_prefill_shape<KV, DMAX>;
    __shared__ __align__(16) unsigned char k_tile[S::KT * S::K_ROW];
    __shared__ __align__(16) unsigned char v_tile[S::KT * S::K_ROW];
    __shared__ __align__(16) float q_s[S::R * S::Q_ROW];
    __shared__ __align__(16) float p_s[S::R * S::P_ROW];
    __shared__ float m_s[S::R], l_s[S::R], alpha_s[S::R];
    __shared__ int64_t lo_s[S::R], hi_s[S::R];

    const int tid = (int)threadIdx.x;
    sy_attn_gpu_prefill_place at;
    if (!sy_attn_gpu_prefill_find(p, &at))
        return;
    const uint32_t h = at.h, g0 = at.g0, D = p.head_dim;
    const int64_t q_row0 = at.q_row0;

    /* Rows r = (query i0 + r / gc, head g0 + r % gc) and their keys [lo, hi). */
    if (tid < S::R) {
        uint32_t qi, gi;
        int64_t lo = 0, hi = 0;
        if (sy_attn_gpu_prefill_row(p, at, (uint32_t)tid, &qi, &gi))
            sy_attn_gpu_prefill_keys(p, at, (int64_t)at.i0 + qi, &lo, &hi);
        lo_s[tid] = lo;
        hi_s[tid] = hi;
        m_s[tid] = -INFINITY;
        l_s[tid] = 0.0f;
    }
    for (int idx = tid; idx < S::R * DMAX; idx += S::NT) {
        const uint32_t r = idx / DMAX, d = idx % DMAX;
        uint32_t qi, gi;
        float x = 0.0f;
        if (sy_attn_gpu_prefill_row(p, at, r, &qi, &gi) && d < D)
            x = sy_gpu_load_act(p.c.q, p.c.io_dtype,
                                (q_row0 + at.i0 + qi) * p.c.q_s0 + (int64_t)(h * p.group + g0 + gi) * p.c.q_s1 + d);
        q_s[r * S::Q_ROW + d] = x;
    }
    __syncthreads();
    int64_t first, last, inner_lo, inner_hi;
    sy_attn_gpu_prefill_span(p, at, &first, &last, &inner_lo, &inner_hi);

    float acc[S::RPV][S::DPT];
#pragma unroll
    for (int i = 0; i < S::RPV; i++)
#pragma unroll
        for (int j = 0; j < S::DPT; j++)
            acc[i][j] = 0.0f;
    uint4 staged[S::PER_THREAD];
    const int64_t read_lo = p.block_tables ? first : 0; /* keys below it are zeros (paged: maybe freed) */
    if (first < last)
        first = first / S::KT * S::KT;
    else
        first = last = 0;
    if (first < last) {
#pragma unroll
        for (int i = 0; i < S::PER_THREAD; i++)
            staged[i] = sy_attn_gpu_prefill_fetch<S, KV>(p, at, h, read_lo, first, tid + S::NT * i);
    }
    const int chunks = (int)((D + S::VEC - 1) / S::VEC);
    const int rs = tid / 16, ks = tid % 16; /* QK slots */
    const int ds = tid % 32, rv = tid / 32; /* PV slots */
    for (int64_t t0 = first; t0 < last; t0 += S::KT) {
#pragma unroll
        for (int i = 0; i < S::PER_THREAD; i++)
            sy_attn_gpu_prefill_store<S, KV>(p, k_tile, v_tile, tid + S::NT * i, staged[i]);
        __syncthreads();
        if (t0 + S::KT < last) {
#pragma unroll
            for (int i = 0; i < S::PER_THREAD; i++)
                staged[i] = sy_attn_gpu_prefill_fetch<S, KV>(p, at, h, read_lo, t0 + S::KT, tid + S::NT * i);
        }

        /* QK: rows rs + 8 i, keys ks + 16 jj. */
        {
            float s[S::RPT][S::KPT];
#pragma unroll
            for (int i = 0; i < S::RPT; i++)
#pragma unroll
                for (int jj = 0; jj < S::KPT; jj++)
                    s[i][jj] = 0.0f;
            for (int c = 0; c < chunks; c++) {
                uint4 raw[S::KPT];
#pragma unroll
                for (int jj = 0; jj < S::KPT; jj++) {
                    const int n = ks + 16 * jj;
                    raw[jj] = n < S::KT ? sy_ld_raw<16>(k_tile + n * S::K_ROW + c * 16) : make_uint4(0u, 0u, 0u, 0u);
                }
#pragma unroll
                for (int q4 = 0; q4 < S::VEC / 4; q4++) {
                    float kx[S::KPT][4];
#pragma unroll
                    for (int jj = 0; jj < S::KPT; jj++)
                        sy_unpack4<KV>(raw[jj], q4, kx[jj]);
#pragma unroll
                    for (int i = 0; i < S::RPT; i++) {
                        const float4 qv = *(const float4 *)&q_s[(rs + 8 * i) * S::Q_ROW + c * S::VEC + q4 * 4];
#pragma unroll
                        for (int jj = 0; jj < S::KPT; jj++)
                            s[i][jj] = sy_dot4(s[i][jj], qv, kx[jj]);
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < S::RPT; i++) {
                const int r = rs + 8 * i;
#pragma unroll
                for (int jj = 0; jj < S::KPT; jj++) {
                    const int n = ks + 16 * jj;
                    const int64_t key = t0 + n;
                    if (n < S::KT)
                        p_s[r * S::P_ROW + n] = key >= lo_s[r] && key < hi_s[r] ? s[i][jj] * p.c.score_scale : -INFINITY;
                }
            }
        }
        __syncthreads();
        {
            const int r = tid / S::TPR, lane = tid % S::TPR;
            sy_attn_gpu_softmax_step<S::TPR, S::SPT>(&p_s[r * S::P_ROW], S::KT, lane, &m_s[r], &l_s[r], &alpha_s[r]);
        }
        __syncthreads();

        /* PV: rows rv + 4 i, dims ds + 32 j. */
#pragma unroll
        for (int i = 0; i < S::RPV; i++) {
            const float a = alpha_s[rv + 4 * i];
#pragma unroll
            for (int j = 0; j < S::DPT; j++)
                acc[i][j] *= a;
        }
        for (int n0 = 0; n0 < S::KT; n0 += 4) {
            float4 pv[S::RPV];
#pragma unroll
            for (int i = 0; i < S::RPV; i++)
                pv[i] = *(const float4 *)&p_s[(rv + 4 * i) * S::P_ROW + n0];
#pragma unroll
            for (int nn = 0; nn < 4; nn++) {
                float v[S::DPT];
#pragma unroll
                for (int j = 0; j < S::DPT; j++)
                    v[j] = sy_gpu_decode<KV>(sy_ld_elem_raw<KV>(v_tile + (n0 + nn) * S::K_ROW, ds + 32 * j));
#pragma unroll
                for (int i = 0; i < S::RPV; i++) {
                    const float w = nn == 0 ? pv[i].x : nn == 1 ? pv[i].y : nn == 2 ? pv[i].z : pv[i].w;
#pragma unroll
                    for (int j = 0; j < S::DPT; j++)
                        acc[i][j] = fmaf(w, v[j], acc[i][j]);
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < S::RPV; i++) {
        const uint32_t r = rv + 4 * i;
        uint32_t qi, gi;
        if (!sy_attn_gpu_prefill_row(p, at, r, &qi, &gi))
            continue;
        const int64_t query = (int64_t)at.i0 + qi;
        const uint32_t head = h * p.group + g0 + gi;
        const float *sink = p.c.sinks ? &p.c.sinks[(int64_t)head * p.c.sinks_s0] : NULL;
#pragma unroll
        for (int j = 0; j < S::DPT; j++) {
            const uint32_t d = ds + 32 * j;
            if (d < D)
                sy_gpu_store_act(p.c.out, p.c.io_dtype, (q_row0 + query) * p.c.out_s0 + (int64_t)head * p.c.out_s1 + d,
                                 sy_attn_gpu_finish(m_s[r], l_s[r], acc[i][j], sink) * p.c.out_scale);
        }
    }
}

/* Rows of a block for head dim bucket dmax (64 or 128). */
static inline uint32_t sy_attn_gpu_prefill_rows(int dmax)
{
    return 2048u / (uint32_t)dmax;
}

template <int KV>
static void sy_attn_gpu_prefill_launch_kv(const sy_attn_gpu_prefill &p, int dmax, dim3 grid, gpuStream_t stream)
{
    if (dmax == 64)
        SY_GPU_LAUNCH(grid, SY_ATTN_GPU_THREADS, 0, stream, sy_attn_gpu_prefill_kernel<KV, 64>)(p);
    else
        SY_GPU_LAUNCH(grid, SY_ATTN_GPU_THREADS, 0, stream, sy_attn_gpu_prefill_kernel<KV, 128>)(p);
}

static inline void sy_attn_gpu_prefill_launch(const sy_attn_gpu_prefill &p, int32_t kv_dtype, int dmax, dim3 grid,
                                              gpuStream_t stream)
{
    if (kv_dtype == SY_DTYPE_F32)
        sy_attn_gpu_prefill_launch_kv<SY_DTYPE_F32>(p, dmax, grid, stream);
    else if (kv_dtype == SY_DTYPE_BF16)
        sy_attn_gpu_prefill_launch_kv<SY_DTYPE_BF16>(p, dmax, grid, stream);
    else
        sy_attn_gpu_prefill_launch_kv<SY_DTYPE_FP8_E4M3>(p, dmax, grid, stream);
}

#if defined(SY_VENDOR_CUDA) || defined(SY_EMU_TENSOR_CORES)
#include "attn_prefill_gpu_mma.cuh"
#endif

#endif
