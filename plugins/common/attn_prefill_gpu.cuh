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
 * block finds its sequence with a block-wide scan of cu_seqlens_q.
 *
 * CUDA cores, f32 accumulation: every K/V dtype and alignment, and the HIP build. CUDA builds (and
 * tests/gpu's emulator at warp 32) run bf16 K/V with aligned rows on tensor cores instead
 * (attn_prefill_gpu_mma.cuh, which shares the query tiles above and the finish). */
#ifndef SY_ATTN_PREFILL_GPU_CUH
#define SY_ATTN_PREFILL_GPU_CUH

#include "attn_core_gpu.cuh"

typedef struct sy_attn_gpu_prefill {
    sy_attn_gpu_call c;
    const void *k, *v;
    int64_t k_s0, k_s1, v_s0, v_s1;
    uint32_t k_aligned, v_aligned; /* 16-byte aligned pointer, strides and row length */
    uint32_t q_vec;                /* q's pointer and strides: 16-byte aligned */
    uint32_t out_pairs;            /* out's pointer and strides: aligned to two elements */
    const int32_t *cu_q, *cu_k;
    uint32_t batch;
    int32_t causal;
    uint32_t kv_heads, group, head_dim;
    uint32_t heads_per_block;   /* q heads of one KV head in a block: min(group, R) */
    uint32_t queries_per_block; /* R / heads_per_block */
    uint32_t head_chunks;       /* ceil(group / heads_per_block) */
} sy_attn_gpu_prefill;

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

/* The block's query tile: finds sequence b with tiles_before(b) <= tile < tiles_before(b + 1),
 * tiles(b) = ceil(Lq_b / bq), with a block-wide scan over the batch. Returns false (for the whole
 * block) past the last tile. */
SY_DEV bool sy_attn_gpu_prefill_tile(const sy_attn_gpu_prefill &p, uint32_t tile, uint32_t *b_out, uint32_t *i0_out)
{
    __shared__ uint32_t start_s[SY_ATTN_GPU_THREADS];
    __shared__ int32_t found_b;
    __shared__ uint32_t found_i0;
    const uint32_t tid = threadIdx.x, per = (p.batch + SY_ATTN_GPU_THREADS - 1) / SY_ATTN_GPU_THREADS;
    const uint32_t b_lo = tid * per < p.batch ? tid * per : p.batch, b_hi = b_lo + per < p.batch ? b_lo + per : p.batch;
    const uint32_t bq = p.queries_per_block;
    uint32_t count = 0;
    for (uint32_t b = b_lo; b < b_hi; b++)
        count += ((uint32_t)(p.cu_q[b + 1] - p.cu_q[b]) + bq - 1) / bq;
    start_s[tid] = count;
    if (tid == 0)
        found_b = -1;
    /* Inclusive scan in log2(threads) steps (Hillis and Steele): one thread summing all entries
     * in turn was a dependent chain of shared-memory round trips, microseconds a block. */
    for (uint32_t step = 1; step < SY_ATTN_GPU_THREADS; step *= 2) {
        __syncthreads();
        const uint32_t add = tid >= step ? start_s[tid - step] : 0u;
        __syncthreads();
        start_s[tid] += add;
    }
    __syncthreads();
    const uint32_t start = start_s[tid] - count;
    if (tile >= start && tile < start + count) {
        uint32_t at = start;
        for (uint32_t b = b_lo; b < b_hi; b++) {
            const uint32_t n = ((uint32_t)(p.cu_q[b + 1] - p.cu_q[b]) + bq - 1) / bq;
            if (tile < at + n) {
                found_b = (int32_t)b;
                found_i0 = (tile - at) * bq;
                break;
            }
            at += n;
        }
    }
    __syncthreads();
    *b_out = (uint32_t)found_b;
    *i0_out = found_i0;
    return found_b >= 0;
}

/* The block's query tile and head slot (KV head x head chunk). Blocks are handed out in linear
 * order (x fastest), and that order walks the slots fastest and the query tiles from the last:
 * a causal sequence's longest tiles start first and its shortest fill the tail, instead of the
 * longest starting last and running alone. */
SY_DEV void sy_attn_gpu_prefill_block(uint32_t *tile, uint32_t *slot)
{
    const uint32_t linear = blockIdx.x + gridDim.x * blockIdx.y, slots = gridDim.y;
    *slot = linear % slots;
    *tile = gridDim.x - 1 - linear / slots;
}

template <class S, int KV>
SY_DEV uint4 sy_attn_gpu_prefill_fetch(const sy_attn_gpu_prefill &p, uint32_t h, int64_t row0, int64_t lk, int64_t t0,
                                       int id)
{
    const bool value = id >= S::CHUNKS;
    const int k = value ? id - S::CHUNKS : id, n = k / S::CPR, c = k % S::CPR;
    const int64_t key = t0 + n;
    if (key >= lk || (uint32_t)(c * S::VEC) >= p.head_dim)
        return make_uint4(0u, 0u, 0u, 0u);
    const int n_valid = p.head_dim - c * S::VEC < (uint32_t)S::VEC ? (int)(p.head_dim - c * S::VEC) : S::VEC;
    const int64_t s0 = value ? p.v_s0 : p.k_s0, s1 = value ? p.v_s1 : p.k_s1;
    const uint64_t elem = (uint64_t)((row0 + key) * s0 + (int64_t)h * s1) + (uint64_t)c * S::VEC;
    return sy_attn_ld_chunk<KV>(value ? p.v : p.k, elem, n_valid, value ? p.v_aligned : p.k_aligned);
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
    __shared__ int64_t span_lo, span_hi;

    const int tid = (int)threadIdx.x;
    uint32_t query_tile, slot, b, i0;
    sy_attn_gpu_prefill_block(&query_tile, &slot);
    if (!sy_attn_gpu_prefill_tile(p, query_tile, &b, &i0))
        return;
    const uint32_t h = slot / p.head_chunks, g0 = (slot % p.head_chunks) * p.heads_per_block;
    const uint32_t D = p.head_dim, gc = p.heads_per_block;
    const int64_t q_row0 = p.cu_q[b], lq = p.cu_q[b + 1] - q_row0, k_row0 = p.cu_k[b], lk = p.cu_k[b + 1] - k_row0;

    /* Rows r = (query i0 + r / gc, head g0 + r % gc) and their keys [lo, hi). */
    if (tid < S::R) {
        const uint32_t qi = tid / gc, gi = tid % gc;
        const int64_t i = (int64_t)i0 + qi;
        int64_t lo = 0, hi = 0;
        if (qi < p.queries_per_block && i < lq && g0 + gi < p.group) {
            const int64_t pos = lk - lq + i;
            hi = p.causal || p.c.window > 0 ? pos + 1 : lk;
            lo = p.c.window > 0 && pos + 1 > p.c.window ? pos + 1 - p.c.window : 0;
        }
        lo_s[tid] = lo;
        hi_s[tid] = hi;
        m_s[tid] = -INFINITY;
        l_s[tid] = 0.0f;
    }
    for (int idx = tid; idx < S::R * DMAX; idx += S::NT) {
        const uint32_t r = idx / DMAX, d = idx % DMAX, qi = r / gc, gi = r % gc;
        const int64_t i = (int64_t)i0 + qi;
        float x = 0.0f;
        if (qi < p.queries_per_block && i < lq && g0 + gi < p.group && d < D)
            x = sy_gpu_load_act(p.c.q, p.c.io_dtype, (q_row0 + i) * p.c.q_s0 + (int64_t)(h * p.group + g0 + gi) * p.c.q_s1 + d);
        q_s[r * S::Q_ROW + d] = x;
    }
    __syncthreads();
    if (tid == 0) {
        int64_t lo = INT64_MAX, hi = 0;
        for (int r = 0; r < S::R; r++)
            if (lo_s[r] < hi_s[r]) {
                lo = lo_s[r] < lo ? lo_s[r] : lo;
                hi = hi_s[r] > hi ? hi_s[r] : hi;
            }
        span_lo = lo < hi ? lo / S::KT * S::KT : 0;
        span_hi = lo < hi ? hi : 0;
    }
    __syncthreads();
    const int64_t first = span_lo, last = span_hi;

    float acc[S::RPV][S::DPT];
#pragma unroll
    for (int i = 0; i < S::RPV; i++)
#pragma unroll
        for (int j = 0; j < S::DPT; j++)
            acc[i][j] = 0.0f;
    uint4 staged[S::PER_THREAD];
    if (first < last) {
#pragma unroll
        for (int i = 0; i < S::PER_THREAD; i++)
            staged[i] = sy_attn_gpu_prefill_fetch<S, KV>(p, h, k_row0, lk, first, tid + S::NT * i);
    }
    const int chunks = (int)((D + S::VEC - 1) / S::VEC);
    const int rs = tid / 16, ks = tid % 16; /* QK slots */
    const int ds = tid % 32, rv = tid / 32; /* PV slots */
    for (int64_t t0 = first; t0 < last; t0 += S::KT) {
#pragma unroll
        for (int i = 0; i < S::PER_THREAD; i++) {
            const int id = tid + S::NT * i, k = id < S::CHUNKS ? id : id - S::CHUNKS;
            unsigned char *tile = id < S::CHUNKS ? k_tile : v_tile;
            sy_st_raw<16>(tile + (k / S::CPR) * S::K_ROW + (k % S::CPR) * 16, staged[i]);
        }
        __syncthreads();
        if (t0 + S::KT < last) {
#pragma unroll
            for (int i = 0; i < S::PER_THREAD; i++)
                staged[i] = sy_attn_gpu_prefill_fetch<S, KV>(p, h, k_row0, lk, t0 + S::KT, tid + S::NT * i);
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
        const uint32_t r = rv + 4 * i, qi = r / gc, gi = r % gc;
        const int64_t query = (int64_t)i0 + qi;
        if (qi >= p.queries_per_block || query >= lq || g0 + gi >= p.group)
            continue;
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
