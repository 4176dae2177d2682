/* Prefill attention on NVIDIA tensor cores for bf16 K/V whose rows are 16-byte aligned (CUDA
 * builds; fp8 and f32 K/V, unaligned rows and the HIP build keep the CUDA-core kernel of
 * attn_prefill_gpu.cuh, whose query tiles, row ranges and finish this shares).
 *
 * The flash-attention-2 structure (Dao, "FlashAttention-2", 2023, section 3): a block of 4 warps
 * owns ROWS (query, q head) rows of one KV head, each warp 16 or 32 of them as one or two m-tiles
 * of mma m16n8k16 (fragments in mma_bf16_cuda.cuh), and walks the key tiles of the rows' union
 * range, 64 keys a tile, two tiles in flight with cp.async. Per tile a warp computes
 *   S = Q K^T      q's fragments in registers for the whole call, K's from the shared tile with
 *                  ldmatrix (K rows are the k-major B as stored);
 *   online softmax on S in registers: a row's 64 scores sit in the 4 lanes of a quad, so its max
 *                  and sum are two shuffles; scores in log2 units so that each is one ex2;
 *   O += P V       the probabilities rounded to bf16 become A fragments without leaving the
 *                  registers (an m16n8 accumulator pair is an m16k16 A fragment), V's B fragments
 *                  come from the [key][dim] tile with ldmatrix .trans.
 * Rows of one block are queries i0 .. i0 + ROWS / gc of gc q heads (as the CUDA-core kernel), so a
 * causal block spans few queries and one K/V tile serves all gc heads. Only tiles that cross a
 * row's [lo, hi) are masked.
 *
 * Numerics: K, V and bf16 q enter as they are; an f32 q enters as bf16 high and low parts (two
 * products, QPLANES), which keeps the scores within f32 rounding. The probabilities enter as
 * bf16 (one product), so the output carries their 2^-9 rounding, averaged over the keys (about
 * 2e-4 relative L2 in check_kv_attn, against 5e-5 for the CUDA-core kernel), inside the bf16
 * attention bound of the conformance tolerances (4e-3), which every K/V this kernel takes is held
 * to. The denominator sums the unrounded probabilities.
 *
 * Speed (H200, gpt-oss shapes, causal with sinks): 1 x 8192 in 2.53 ms, 217 TFLOP/s (the CUDA-core
 * kernel: 23.8 ms). ncu: 255 registers a thread leave 2 blocks (8 warps) an SM, and each warp
 * waits on its own mma and exp chains (issue slots 40% busy). The registers are the unrolled tile
 * body's: q's fragments read from a shared tile instead left the count at 255, and a cap of 168
 * spilled and ran slower. */
#ifndef SY_ATTN_PREFILL_GPU_MMA_CUH
#define SY_ATTN_PREFILL_GPU_MMA_CUH

#include <limits.h>
#include <stdint.h>

#include "cp_async_cuda.cuh"
#include "gpu_runtime.h"
#include "mma_bf16_cuda.cuh"

template <int DMAX, bool QPLANES>
struct sy_attn_prefill_mma_shape {
    static constexpr int DIMS = DMAX;
    static constexpr int WARPS = SY_ATTN_GPU_THREADS / 32;
    /* m-tiles a warp: two only where q's fragments (one plane at head dim 64) leave the registers */
    static constexpr int MT = DMAX == 64 && !QPLANES ? 2 : 1;
    static constexpr int ROWS = WARPS * 16 * MT;     /* (query, head) rows of a block */
    static constexpr int KT = 64;                    /* keys of a tile */
    static constexpr int NT = KT / 8;                /* QK n-tiles of 8 keys */
    static constexpr int KS = DMAX / 16;             /* QK k-steps over the head dim */
    static constexpr int DT = DMAX / 8;              /* PV n-tiles of 8 dims */
    static constexpr int ROW_BYTES = DMAX * 2 + 16;  /* the 16 bytes of pad make ldmatrix's 8 rows hit all banks */
    static constexpr int TILE_BYTES = KT * ROW_BYTES;
    static constexpr int SMEM_BYTES = 2 * 2 * TILE_BYTES; /* K and V, two stages */
    static constexpr int PIECES = KT * DMAX / 8;     /* 16-byte pieces of one tensor's tile */
    static constexpr int PER_THREAD = PIECES / SY_ATTN_GPU_THREADS;
    static_assert(PIECES % SY_ATTN_GPU_THREADS == 0 && KS % 2 == 0 && DT % 2 == 0, "whole x4 loads");
};

/* Rows of a block of the tensor-core kernel for head dim bucket dmax (64 or 128) and q's dtype. */
static inline uint32_t sy_attn_gpu_prefill_mma_rows(int dmax, int32_t q_dtype)
{
    if (q_dtype == SY_DTYPE_F32)
        return dmax == 64 ? sy_attn_prefill_mma_shape<64, true>::ROWS : sy_attn_prefill_mma_shape<128, true>::ROWS;
    return dmax == 64 ? sy_attn_prefill_mma_shape<64, false>::ROWS : sy_attn_prefill_mma_shape<128, false>::ROWS;
}

/* The copies of the K and V tile of keys [t0, t0 + KT) into one stage; keys past the sequence
 * and dims past the head dim are zeros (a zero V row keeps 0 x garbage out of the output). */
template <class S>
SY_DEV void sy_attn_prefill_mma_issue(const sy_attn_gpu_prefill &p, uint32_t h, int64_t row0, int64_t lk, int64_t t0,
                                      unsigned char *k_stage, unsigned char *v_stage)
{
    constexpr int PIECES_PER_ROW = S::DIMS / 8;
#pragma unroll
    for (int i = 0; i < S::PER_THREAD; i++) {
        const int id = (int)threadIdx.x + SY_ATTN_GPU_THREADS * i, n = id / PIECES_PER_ROW, c = id % PIECES_PER_ROW;
        const int64_t key = t0 + n;
        const bool have = key < lk && (uint32_t)c * 8u < p.head_dim;
        const uint16_t *k = (const uint16_t *)p.k + (row0 + key) * p.k_s0 + (int64_t)h * p.k_s1 + c * 8;
        const uint16_t *v = (const uint16_t *)p.v + (row0 + key) * p.v_s0 + (int64_t)h * p.v_s1 + c * 8;
        sy_cp_async16(k_stage + n * S::ROW_BYTES + c * 16, have ? (const void *)k : p.k, have ? 16 : 0);
        sy_cp_async16(v_stage + n * S::ROW_BYTES + c * 16, have ? (const void *)v : p.v, have ? 16 : 0);
    }
}

SY_DEV float sy_attn_mma_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

template <int DMAX, bool QPLANES>
static __global__ __launch_bounds__(SY_ATTN_GPU_THREADS, 2) void sy_attn_gpu_prefill_mma_kernel(
    const sy_attn_gpu_prefill p)
{
    using S = sy_attn_prefill_mma_shape<DMAX, QPLANES>;
    extern __shared__ __align__(16) unsigned char sy_prefill_mma_smem[];
    __shared__ int span_lo, span_hi, inner_lo, inner_hi;
    constexpr float LOG2E = 1.4426950408889634f, LN2 = 0.6931471805599453f;

    uint32_t b, i0;
    if (!sy_attn_gpu_prefill_tile(p, blockIdx.x, &b, &i0))
        return;
    const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, c = lane % 4;
    const uint32_t h = blockIdx.y / p.head_chunks, g0 = (blockIdx.y % p.head_chunks) * p.heads_per_block;
    const uint32_t gc = p.heads_per_block, D = p.head_dim;
    const int64_t q_row0 = p.cu_q[b], lq = p.cu_q[b + 1] - q_row0, k_row0 = p.cu_k[b], lk = p.cu_k[b + 1] - k_row0;
    if (tid == 0)
        span_lo = INT_MAX, span_hi = 0, inner_lo = 0, inner_hi = INT_MAX;

    /* This lane's rows warp * 16 MT + 16 mt + g + 8 hf: their keys [lo, hi) (empty when the row is
     * padding), and the block's union [span_lo, span_hi) and intersection [inner_lo, inner_hi). */
    int lo[S::MT][2], hi[S::MT][2];
    int my_span_lo = INT_MAX, my_span_hi = 0, my_inner_lo = 0, my_inner_hi = INT_MAX;
#pragma unroll
    for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const uint32_t r = (uint32_t)(warp * 16 * S::MT + mt * 16 + g + 8 * hf), qi = r / gc, gi = r % gc;
            const int64_t i = (int64_t)i0 + qi;
            lo[mt][hf] = hi[mt][hf] = 0;
            if (qi < p.queries_per_block && i < lq && g0 + gi < p.group) {
                const int64_t pos = lk - lq + i;
                hi[mt][hf] = (int)(p.causal || p.c.window > 0 ? pos + 1 : lk);
                lo[mt][hf] = (int)(p.c.window > 0 && pos + 1 > p.c.window ? pos + 1 - p.c.window : 0);
                my_span_lo = min(my_span_lo, lo[mt][hf]), my_span_hi = max(my_span_hi, hi[mt][hf]);
                my_inner_lo = max(my_inner_lo, lo[mt][hf]), my_inner_hi = min(my_inner_hi, hi[mt][hf]);
            }
        }
    __syncthreads(); /* the shared ranges are initialized */
    my_span_lo = __reduce_min_sync(0xFFFFFFFFu, my_span_lo), my_span_hi = __reduce_max_sync(0xFFFFFFFFu, my_span_hi);
    my_inner_lo = __reduce_max_sync(0xFFFFFFFFu, my_inner_lo), my_inner_hi = __reduce_min_sync(0xFFFFFFFFu, my_inner_hi);
    if (lane == 0) {
        atomicMin(&span_lo, my_span_lo), atomicMax(&span_hi, my_span_hi);
        atomicMax(&inner_lo, my_inner_lo), atomicMin(&inner_hi, my_inner_hi);
    }
    __syncthreads(); /* the block's ranges are complete */
    const int last = span_hi, first = span_lo < last ? span_lo / S::KT * S::KT : last;
    const int full_lo = inner_lo, full_hi = inner_hi;

    float o[S::MT][S::DT][4], m[S::MT][2], l[S::MT][2];
    sy_mma_zero(o);
#pragma unroll
    for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
            m[mt][hf] = -INFINITY, l[mt][hf] = 0.0f;
    unsigned char *k_ring = sy_prefill_mma_smem, *v_ring = sy_prefill_mma_smem + 2 * S::TILE_BYTES;
    if (first < last)
        sy_attn_prefill_mma_issue<S>(p, h, k_row0, lk, first, k_ring, v_ring);
    sy_cp_async_commit();

    /* q's A fragments, read while the first tile is in flight: register j of (mt, ks) holds row
     * g + 8 (j % 2), dims 16 ks + 2c + 8 (j / 2). */
    uint32_t q_hi[S::MT][S::KS][4], q_lo[QPLANES ? S::MT : 1][QPLANES ? S::KS : 1][4];
#pragma unroll
    for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t r = (uint32_t)(warp * 16 * S::MT + mt * 16 + g + 8 * (j % 2)), qi = r / gc, gi = r % gc;
            const int64_t i = (int64_t)i0 + qi;
            const bool row_ok = qi < p.queries_per_block && i < lq && g0 + gi < p.group;
            const int64_t base = (q_row0 + i) * p.c.q_s0 + (int64_t)(h * p.group + g0 + gi) * p.c.q_s1;
#pragma unroll
            for (int ks = 0; ks < S::KS; ks++) {
                /* Typed loads (q is f32 exactly when QPLANES, else bf16) that the compiler can
                 * issue together: a per-element dtype test kept them one after another. */
                const uint32_t d = (uint32_t)(ks * 16 + 2 * c + 8 * (j / 2));
                const bool have0 = row_ok && d < D, have1 = row_ok && d + 1 < D;
                if constexpr (QPLANES) {
                    const float *q = (const float *)p.c.q + base + d;
                    sy_mma_split_bf16(have0 ? q[0] : 0.0f, have1 ? q[1] : 0.0f, &q_hi[mt][ks][j], &q_lo[mt][ks][j]);
                } else {
                    const uint16_t *q = (const uint16_t *)p.c.q + base + d;
                    q_hi[mt][ks][j] = (uint32_t)(have0 ? q[0] : 0u) | (uint32_t)(have1 ? q[1] : 0u) << 16;
                }
            }
        }
    const float score_scale = p.c.score_scale * LOG2E;
    /* ldmatrix row addresses of this lane: matrix lane / 8, row lane % 8 */
    const int mi = lane / 8, mr = lane % 8;
    for (int t0 = first, st = 0; t0 < last; t0 += S::KT, st ^= 1) {
        if (t0 + S::KT < last)
            sy_attn_prefill_mma_issue<S>(p, h, k_row0, lk, t0 + S::KT, k_ring + (st ^ 1) * S::TILE_BYTES,
                                         v_ring + (st ^ 1) * S::TILE_BYTES);
        sy_cp_async_commit();
        sy_cp_async_wait<1>(); /* this thread's copies of tile t0 have landed */
        __syncthreads();       /* and everyone's */
        const unsigned char *k_tile = k_ring + st * S::TILE_BYTES, *v_tile = v_ring + st * S::TILE_BYTES;

        float s[S::MT][S::NT][4];
        sy_mma_zero(s);
#pragma unroll
        for (int nt = 0; nt < S::NT; nt++)
#pragma unroll
            for (int kp = 0; kp < S::KS / 2; kp++) {
                /* matrices: keys 8 nt .., dims 32 kp + 8 mi: B of k-steps 2 kp (0, 1) and 2 kp + 1 (2, 3) */
                uint32_t kb[4];
                sy_ldmatrix_x4<false>(kb, k_tile + (8 * nt + mr) * S::ROW_BYTES + (32 * kp + 8 * mi) * 2);
#pragma unroll
                for (int mt = 0; mt < S::MT; mt++) {
                    sy_mma_bf16(s[mt][nt], q_hi[mt][2 * kp], kb[0], kb[1]);
                    sy_mma_bf16(s[mt][nt], q_hi[mt][2 * kp + 1], kb[2], kb[3]);
                    if constexpr (QPLANES) {
                        sy_mma_bf16(s[mt][nt], q_lo[mt][2 * kp], kb[0], kb[1]);
                        sy_mma_bf16(s[mt][nt], q_lo[mt][2 * kp + 1], kb[2], kb[3]);
                    }
                }
            }

        /* Scores in log2 units, masked where the tile crosses a row's range; the online softmax. */
        const bool masked = t0 < full_lo || t0 + S::KT > full_hi;
#pragma unroll
        for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                float mx = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < S::NT; nt++)
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        const int key = t0 + 8 * nt + 2 * c + j;
                        float x = s[mt][nt][2 * hf + j] * score_scale;
                        if (masked && (key < lo[mt][hf] || key >= hi[mt][hf]))
                            x = -INFINITY;
                        s[mt][nt][2 * hf + j] = x;
                        mx = fmaxf(mx, x);
                    }
                mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 2));
                const float m_new = fmaxf(m[mt][hf], mx), base = m_new == -INFINITY ? 0.0f : m_new;
                const float alpha = sy_attn_mma_exp2(m[mt][hf] - base);
                m[mt][hf] = m_new;
                float sum = 0.0f;
#pragma unroll
                for (int nt = 0; nt < S::NT; nt++)
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        const float e = sy_attn_mma_exp2(s[mt][nt][2 * hf + j] - base);
                        s[mt][nt][2 * hf + j] = e;
                        sum += e;
                    }
                l[mt][hf] = l[mt][hf] * alpha + sum;
#pragma unroll
                for (int dt = 0; dt < S::DT; dt++)
#pragma unroll
                    for (int j = 0; j < 2; j++)
                        o[mt][dt][2 * hf + j] *= alpha;
            }
#pragma unroll
        for (int kk = 0; kk < S::KT / 16; kk++) {
            /* P's A fragments of key k-step kk: n-tiles 2 kk (registers 0, 1) and 2 kk + 1 (2, 3). */
            uint32_t pa[S::MT][4];
#pragma unroll
            for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float *e = s[mt][2 * kk + j / 2] + 2 * (j % 2);
                    pa[mt][j] = sy_mma_pack_bf16x2(e[0], e[1]);
                }
#pragma unroll
            for (int dp = 0; dp < S::DT / 2; dp++) {
                /* matrices: keys 16 kk + 8 (mi % 2) .., dims 16 dp + 8 (mi / 2): B of n-tiles 2 dp and 2 dp + 1 */
                uint32_t vb[4];
                sy_ldmatrix_x4<true>(vb, v_tile + (16 * kk + 8 * (mi % 2) + mr) * S::ROW_BYTES + (16 * dp + 8 * (mi / 2)) * 2);
#pragma unroll
                for (int mt = 0; mt < S::MT; mt++) {
                    sy_mma_bf16(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
                    sy_mma_bf16(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
                }
            }
        }
        __syncthreads(); /* every warp is done with the stage the next iteration refills */
    }

#pragma unroll
    for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float sum = l[mt][hf];
            sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
            sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
            const uint32_t r = (uint32_t)(warp * 16 * S::MT + mt * 16 + g + 8 * hf), qi = r / gc, gi = r % gc;
            const int64_t query = (int64_t)i0 + qi;
            if (qi >= p.queries_per_block || query >= lq || g0 + gi >= p.group)
                continue;
            const uint32_t head = h * p.group + g0 + gi;
            const float *sink = p.c.sinks ? &p.c.sinks[(int64_t)head * p.c.sinks_s0] : NULL;
            const float m_nat = m[mt][hf] * LN2; /* the scores' max back in natural-log units */
            const int64_t out_row = (q_row0 + query) * p.c.out_s0 + (int64_t)head * p.c.out_s1;
#pragma unroll
            for (int dt = 0; dt < S::DT; dt++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const uint32_t d = (uint32_t)(8 * dt + 2 * c + j);
                    if (d < D)
                        sy_gpu_store_act(p.c.out, p.c.io_dtype, out_row + d,
                                         sy_attn_gpu_finish(m_nat, sum, o[mt][dt][2 * hf + j], sink) * p.c.out_scale);
                }
        }
}

/* Whether the tensor-core kernel takes a call: bf16 K/V with 16-byte aligned rows. */
static inline bool sy_attn_gpu_prefill_mma_takes(const sy_attn_gpu_prefill &p, int32_t kv_dtype)
{
    return kv_dtype == SY_DTYPE_BF16 && p.k_aligned && p.v_aligned;
}

template <int DMAX, bool QPLANES>
static sy_status sy_attn_gpu_prefill_mma_launch_as(const sy_attn_gpu_prefill &p, dim3 grid, gpuStream_t stream,
                                                   sy_error *err)
{
    using S = sy_attn_prefill_mma_shape<DMAX, QPLANES>;
    /* Past 48 KB of shared memory a kernel must opt in, per device: set on every launch. */
    if (S::SMEM_BYTES > 48 * 1024)
        SY_GPU_CHECKF(err,
                      cudaFuncSetAttribute(sy_attn_gpu_prefill_mma_kernel<DMAX, QPLANES>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES),
                      "for %d bytes of shared memory", S::SMEM_BYTES);
    sy_attn_gpu_prefill_mma_kernel<DMAX, QPLANES><<<grid, SY_ATTN_GPU_THREADS, S::SMEM_BYTES, stream>>>(p);
    return SY_OK;
}

static inline sy_status sy_attn_gpu_prefill_mma_launch(const sy_attn_gpu_prefill &p, int dmax, dim3 grid,
                                                       gpuStream_t stream, sy_error *err)
{
    const bool planes = p.c.io_dtype == SY_DTYPE_F32;
    if (dmax == 64)
        return planes ? sy_attn_gpu_prefill_mma_launch_as<64, true>(p, grid, stream, err)
                      : sy_attn_gpu_prefill_mma_launch_as<64, false>(p, grid, stream, err);
    return planes ? sy_attn_gpu_prefill_mma_launch_as<128, true>(p, grid, stream, err)
                  : sy_attn_gpu_prefill_mma_launch_as<128, false>(p, grid, stream, err);
}

#endif
