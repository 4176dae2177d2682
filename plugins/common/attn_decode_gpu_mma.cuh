/* Decode attention's two products on NVIDIA tensor cores, for bf16 and fp8 K/V (CUDA builds;
 * f32 K/V and the HIP build keep the CUDA-core products of attn_decode_gpu.cuh, whose tiles,
 * loads, softmax and split-K combine these share).
 *
 * Per 64-key tile, with the block's GQA group of 8 q heads as the n = 8 of mma m16n8k16
 * (fragments in mma_bf16_cuda.cuh):
 *   QK  S^T[key][head] = K[key][dim] Q^T[dim][head]: each of the 4 warps one 16-key m-tile, K
 *       straight from its shared-memory rows as A, q as B in registers for the whole call;
 *   PV  O^T[dim][head] += V^T[dim][key] P^T[key][head]: each warp 16 dims (32 at head dim 128),
 *       V as A (vectorized_5d keeps V as [dim][key] rows, so pairs of keys are one load; nhd
 *       pairs two rows), the probabilities from the softmax row as B.
 * Keys are bf16 as stored, or e4m3 widened to bf16 (exact: every e4m3 value is a bf16). q and
 * the probabilities are f32, so each goes in as bf16 high and low parts (two products), which
 * keeps the scores and the output within f32 rounding of the CUDA-core version; the dequant
 * scales stay folded into the score scale and the output as there.
 *
 * e4m3 widening. An e4m3 byte s.eeee.mmm moved into bf16's bit positions (sign to bit 15, the
 * magnitude shifted left by 4) is a bf16 of the same value times 2^-120 (the trick of
 * sy_gpu_fp8_to_f32, done on two bytes at once in integer instructions; the NaN code 0x7F keeps
 * NaN). e4m3 subnormals become bf16 subnormals: exact where the tensor cores keep those, read as
 * zero where they flush them (magnitudes under 2^-6 before the scale). The 2^-120 is undone by
 * powers of two that stay exact: q enters the products times 2^60 and the scores are scaled by
 * 2^60 more, the probabilities enter times 2^100 and the
 * output is scaled by 2^20. Powers of two commute with every rounding here, and the scaled
 * operands stay far from overflow and from f32's subnormals (only products of a probability
 * under 2^-97 with the smallest e4m3 values reach them, terms that an f32 sum holding a
 * probability of 1 cannot see), so the results are those of a plain widening. */
#ifndef SY_ATTN_DECODE_GPU_MMA_CUH
#define SY_ATTN_DECODE_GPU_MMA_CUH

#include <stdint.h>

#include "mma_bf16_cuda.cuh"
#include "sy_elem_gpu.cuh"

/* Bytes 0 and 1 of `two` (e4m3) as the bf16 pair of their values times 2^-120 (see above). */
SY_DEV uint32_t sy_attn_mma_widen_e4m3x2(uint32_t two)
{
    const uint32_t halves = __byte_perm(two, 0u, 0x7170u); /* 0x00b1_00b0 */
    const uint32_t mag = halves & 0x007F007Fu;
    const uint32_t bits = mag << 4 | (halves & 0x00800080u) << 8;
    return bits | (__vcmpeq2(mag, 0x007F007Fu) & 0x7FC07FC0u);
}

/* The factors that undo sy_attn_mma_widen_e4m3x2's 2^-120 (1 for bf16 K/V). */
template <int KV>
struct sy_attn_mma_scales {
    static constexpr float Q = KV == SY_DTYPE_BF16 ? 1.0f : 0x1p60f;     /* q into the products */
    static constexpr float SCORE = KV == SY_DTYPE_BF16 ? 1.0f : 0x1p60f; /* on the scores */
    static constexpr float P = KV == SY_DTYPE_BF16 ? 1.0f : 0x1p100f;    /* probabilities into the products */
    static constexpr float OUT = KV == SY_DTYPE_BF16 ? 1.0f : 0x1p20f;   /* on the output */
};

/* Two consecutive elements of a tile row as one fragment register (the first in the low half). */
template <int KV>
SY_DEV uint32_t sy_attn_mma_pair(const unsigned char *e)
{
    if constexpr (KV == SY_DTYPE_BF16)
        return *(const uint32_t *)e;
    else
        return sy_attn_mma_widen_e4m3x2(*(const uint16_t *)e);
}

/* A thread's part of the products: q's B fragments and its output accumulators. */
template <class S, int KV>
struct sy_attn_mma_decode {
    static constexpr int WARPS = S::NT / 32;
    static constexpr int KSTEPS = S::DIMS / 16;       /* k-steps of QK over the head dim */
    static constexpr int MT = S::DIMS / (16 * WARPS); /* PV m-tiles of 16 dims a warp */
    static_assert(KV == SY_DTYPE_BF16 || KV == SY_DTYPE_FP8_E4M3, "tensor-core decode takes bf16 or fp8 K/V");
    static_assert(S::GROUP == 8, "the q heads of a block are the products' n = 8");
    static_assert(S::TILE == 16 * WARPS && S::DIMS % (16 * WARPS) == 0, "one 16-key QK m-tile a warp");
    using Scales = sy_attn_mma_scales<KV>;
    uint32_t q_hi[KSTEPS][2], q_lo[KSTEPS][2];
    float o[MT][4];

    /* q from the block's q rows (visible to all threads), accumulators zeroed. */
    SY_DEV void start(const float *q_s)
    {
        const int lane = (int)threadIdx.x % 32, g = lane / 4, c = lane % 4;
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ks++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float *q = q_s + g * S::Q_ROW + ks * 16 + 8 * h + 2 * c;
                sy_mma_split_bf16(q[0] * Scales::Q, q[1] * Scales::Q, &q_hi[ks][h], &q_lo[ks][h]);
            }
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                o[mt][r] = 0.0f;
    }

    /* Scaled scores of the tile's keys [t0, t0 + TILE) into the softmax rows p_s[head][key];
     * keys outside [lo, hi) get -inf. */
    SY_DEV void qk(const unsigned char *k_tile, float *p_s, int64_t t0, int64_t lo, int64_t hi, float scale) const
    {
        const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, c = lane % 4;
        const int m0 = warp * 16;
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ks++) {
            const unsigned char *r0 = k_tile + (m0 + g) * S::K_ROW + (ks * 16 + 2 * c) * S::ES;
            const unsigned char *r1 = r0 + 8 * S::K_ROW;
            const uint32_t a[4] = {sy_attn_mma_pair<KV>(r0), sy_attn_mma_pair<KV>(r1),
                                   sy_attn_mma_pair<KV>(r0 + 8 * S::ES), sy_attn_mma_pair<KV>(r1 + 8 * S::ES)};
            sy_mma_bf16(s, a, q_hi[ks][0], q_hi[ks][1]);
            sy_mma_bf16(s, a, q_lo[ks][0], q_lo[ks][1]);
        }
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int key = m0 + g + 8 * (r / 2), head = 2 * c + r % 2;
            const int64_t pos = t0 + key;
            p_s[head * S::P_ROW + key] = pos >= lo && pos < hi ? s[r] * Scales::SCORE * scale : -INFINITY;
        }
    }

    /* Keys n and n+1 of dim d of the V tile as one A register. */
    SY_DEV static uint32_t v_pair(const unsigned char *v_tile, int d, int n)
    {
        if constexpr (S::V5D)
            return sy_attn_mma_pair<KV>(v_tile + d * S::V_ROW + n * S::ES);
        else if constexpr (KV == SY_DTYPE_BF16)
            return (uint32_t)*(const uint16_t *)(v_tile + n * S::V_ROW + d * S::ES) |
                   (uint32_t)*(const uint16_t *)(v_tile + (n + 1) * S::V_ROW + d * S::ES) << 16;
        else /* the two rows' bytes side by side, widened together */
            return sy_attn_mma_widen_e4m3x2((uint32_t)v_tile[n * S::V_ROW + d] |
                                            (uint32_t)v_tile[(n + 1) * S::V_ROW + d] << 8);
    }

    /* o = o alpha + P V over the tile, P the softmax row's probabilities. */
    SY_DEV void pv(const unsigned char *v_tile, const float *p_s, const float *alpha_s)
    {
        const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, c = lane % 4;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                o[mt][r] *= alpha_s[2 * c + r % 2];
        const float *p = p_s + g * S::P_ROW;
#pragma unroll
        for (int kb = 0; kb < S::TILE / 16; kb++) {
            const int n0 = kb * 16 + 2 * c, n1 = n0 + 8;
            uint32_t p_hi[2], p_lo[2];
            sy_mma_split_bf16(p[n0] * Scales::P, p[n0 + 1] * Scales::P, &p_hi[0], &p_lo[0]);
            sy_mma_split_bf16(p[n1] * Scales::P, p[n1 + 1] * Scales::P, &p_hi[1], &p_lo[1]);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                const int d = (warp * MT + mt) * 16 + g;
                const uint32_t a[4] = {v_pair(v_tile, d, n0), v_pair(v_tile, d + 8, n0), v_pair(v_tile, d, n1),
                                       v_pair(v_tile, d + 8, n1)};
                sy_mma_bf16(o[mt], a, p_hi[0], p_hi[1]);
                sy_mma_bf16(o[mt], a, p_lo[0], p_lo[1]);
            }
        }
    }

    /* emit(head in the block, dim, accumulator) for each of this thread's outputs. */
    template <class F>
    SY_DEV void each_output(F emit) const
    {
        const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, c = lane % 4;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                emit((uint32_t)(2 * c + r % 2), (uint32_t)((warp * MT + mt) * 16 + g + 8 * (r / 2)),
                     o[mt][r] * Scales::OUT);
    }
};

#endif
