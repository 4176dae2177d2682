/* NeoX RoPE with YaRN scaling and concentration on the GPU (rope_yarn), and the fused rope + KV
 * write for every layout kv_store_gpu.cuh serves.
 *
 * Frequencies: inv_freq and the concentration come from plugins/common/sy_rope.h evaluated on the
 * host (in double, as the host plugin does) and reach the kernels by value. Each block computes
 * cos and sin of position * inv_freq for its tokens once, in double like the host plugin, times the
 * concentration, rounded to f32, into shared memory for all heads. The device's double cos / sin
 * are not the host C library's: they agree to within an ulp or two of double, so the f32 values
 * equal the host's except when the exact result lies within a few double ulps of an f32 rounding
 * boundary (a chance of about 1e-8 per value), where they differ by one f32 ulp. The rotation
 * itself, x1 c - x2 s and x2 c + x1 s, is evaluated without fused multiply-adds, in the host's
 * order, so equal cos / sin give equal outputs bit for bit.
 *
 * Work split: a block owns a group of tokens; units are (token, head, run of RW rotated pairs): a
 * unit reads its RW elements of both halves, so no other unit touches them, and writes the
 * rotations in place. Fused: a block is one of kv_layout.write's tiles (kv_store_gpu.cuh); the
 * rotated K run is rounded to k's dtype (what rope leaves in k), written to k, and that same value
 * staged with sy_kv_gpu_tile_put; V is loaded and staged, and the tile stored, by the write's own
 * steps. So the fused op equals rope followed by the GPU kv_layout.write bit for bit, by
 * construction. */
#ifndef SY_ROPE_GPU_CUH
#define SY_ROPE_GPU_CUH

#include "kv_store_gpu.cuh"
#include "sy_rope.h"

enum {
    SY_ROPE_GPU_THREADS = 128,
    SY_ROPE_GPU_MAX_HEAD_DIM = 512,
    SY_ROPE_GPU_TOKENS = 4,        /* tokens a block of the plain rope kernel owns */
    SY_ROPE_GPU_FUSED_PAIRS = 2048 /* fused: (token, pair) angles held at once, 16 KB beside the stage */
};

/* The fused kernel runs the write's tiles with the write's threads, and its rotation needs a tile
 * to hold whole heads (a pair's two dims in one tile), which sy_kv_gpu_plan gives every head of at
 * most SY_KV_GPU_TILE_UNITS dims and 4 SY_KV_GPU_THREADS dims (4: the fewest dims of a unit). */
static_assert((int)SY_ROPE_GPU_THREADS == (int)SY_KV_GPU_THREADS, "the fused kernel runs the write's tiles");
static_assert((int)SY_ROPE_GPU_MAX_HEAD_DIM <= (int)SY_KV_GPU_TILE_UNITS &&
                  (int)SY_ROPE_GPU_MAX_HEAD_DIM <= 4 * (int)SY_KV_GPU_THREADS,
              "rope heads must fit a write tile whole");

typedef struct sy_rope_gpu_freqs {
    double inv_freq[SY_ROPE_GPU_MAX_HEAD_DIM / 2];
    double concentration;
    uint32_t half;
} sy_rope_gpu_freqs;

typedef struct sy_rope_gpu_tensor {
    void *data;
    int64_t s0, s1;
    uint32_t heads;
    int32_t dtype;
    int32_t vec; /* 16-byte aligned pointer and strides */
} sy_rope_gpu_tensor;

typedef struct sy_rope_gpu_args {
    sy_rope_gpu_tensor q, k;
    const int32_t *positions;
    int64_t positions_s0;
    int64_t tokens;
} sy_rope_gpu_args;

/* Blocks an SM the fused kernel is compiled for. Its q loop is the plain kernel's, one memory
 * latency a unit, so it needs as many warps as the plain kernel gets (47 registers: 10 blocks of
 * 128); left alone, ptxas gives it up to 83 registers, over 100 with fp8 stores, whose conversions
 * take more (8 blocks fit them in 64 without spilling). */
#define SY_ROPE_GPU_FUSED_MIN_BLOCKS(store) ((store) == SY_DTYPE_FP8_E4M3 ? 8 : 10)

/* Tokens of a fused tile whose angles are held at once. */
SY_HD uint32_t sy_rope_gpu_fused_batch(const sy_kv_gpu_launch &l, uint32_t half)
{
    const uint32_t most = SY_ROPE_GPU_FUSED_PAIRS / half;
    return l.tokens < most ? l.tokens : most;
}

/* x1 c - x2 s and x2 c + x1 s with each product and the sum rounded on its own (no contraction into
 * fused multiply-adds), as the host computes them. */
SY_DEV float sy_rope_gpu_first(float x1, float x2, float c, float s)
{
#if defined(__HIPCC__)
#pragma clang fp contract(off)
    return x1 * c - x2 * s;
#else
    return __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
#endif
}

SY_DEV float sy_rope_gpu_second(float x1, float x2, float c, float s)
{
#if defined(__HIPCC__)
#pragma clang fp contract(off)
    return x2 * c + x1 * s;
#else
    return __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
#endif
}

/* cos and sin (times the concentration) of tokens t0 .. t0 + tokens - 1 into cs / sn [tokens][half].
 * Every thread must call it (it ends with a barrier). */
SY_DEV void sy_rope_gpu_angles(const sy_rope_gpu_freqs &f, const sy_rope_gpu_args &a, int64_t t0, uint32_t tokens,
                               float *cs, float *sn)
{
    for (uint32_t i = threadIdx.x; i < tokens * f.half; i += blockDim.x) {
        const int64_t t = t0 + i / f.half;
        if (t >= a.tokens)
            continue;
        const double angle = (double)a.positions[t * a.positions_s0] * f.inv_freq[i % f.half];
        cs[i] = (float)(cos(angle) * f.concentration);
        sn[i] = (float)(sin(angle) * f.concentration);
    }
    __syncthreads();
}

/* Rotates pairs i0 .. i0 + RW - 1 of head h of token t in place; first / second receive the values
 * now in x (rounded to its dtype) at dims i0 + e and half + i0 + e. */
template <int RW>
SY_DEV void sy_rope_gpu_rotate(const sy_rope_gpu_tensor &x, int64_t t, uint32_t h, uint32_t i0, uint32_t half,
                               const float *cs, const float *sn, float *first, float *second)
{
    const int64_t row = t * x.s0 + (int64_t)h * x.s1;
    float x1[RW], x2[RW];
    sy_gpu_load_act_run<RW>(x.data, x.dtype, row + i0, RW, x.vec, x1);
    sy_gpu_load_act_run<RW>(x.data, x.dtype, row + half + i0, RW, x.vec, x2);
#pragma unroll
    for (int e = 0; e < RW; e++) {
        first[e] = sy_gpu_round_act(x.dtype, sy_rope_gpu_first(x1[e], x2[e], cs[i0 + e], sn[i0 + e]));
        second[e] = sy_gpu_round_act(x.dtype, sy_rope_gpu_second(x1[e], x2[e], cs[i0 + e], sn[i0 + e]));
    }
    sy_gpu_store_act_run<RW>(x.data, x.dtype, row + i0, RW, x.vec, first);
    sy_gpu_store_act_run<RW>(x.data, x.dtype, row + half + i0, RW, x.vec, second);
}

/* The units of heads [h0, h0 + heads) of x for the block's tokens. */
template <int RW>
SY_DEV void sy_rope_gpu_rotate_heads(const sy_rope_gpu_tensor &x, const sy_rope_gpu_args &a, uint32_t half, int64_t t0,
                                     uint32_t tokens, uint32_t h0, uint32_t heads, const float *cs, const float *sn)
{
    const uint32_t pairs = half / RW, units = tokens * heads * pairs;
    for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) {
        const uint32_t pc = u % pairs, h = h0 + u / pairs % heads, j = u / (pairs * heads);
        if (t0 + j >= a.tokens)
            continue;
        float first[RW], second[RW];
        sy_rope_gpu_rotate<RW>(x, t0 + j, h, pc * RW, half, cs + j * half, sn + j * half, first, second);
    }
}

template <int RW>
static __global__ __launch_bounds__(SY_ROPE_GPU_THREADS) void sy_rope_gpu_kernel(const sy_rope_gpu_freqs f,
                                                                                const sy_rope_gpu_args a)
{
    SY_GPU_DYNAMIC_SHARED(float, sy_rope_angles);
    float *cs = sy_rope_angles, *sn = sy_rope_angles + SY_ROPE_GPU_TOKENS * f.half;
    const int64_t t0 = (int64_t)blockIdx.x * SY_ROPE_GPU_TOKENS;
    sy_rope_gpu_angles(f, a, t0, SY_ROPE_GPU_TOKENS, cs, sn);
    sy_rope_gpu_rotate_heads<RW>(a.q, a, f.half, t0, SY_ROPE_GPU_TOKENS, 0, a.q.heads, cs, sn);
    sy_rope_gpu_rotate_heads<RW>(a.k, a, f.half, t0, SY_ROPE_GPU_TOKENS, 0, a.k.heads, cs, sn);
}

/* Fused: the tiles of kv_layout.write (sy_kv_gpu_plan), each block also rotating its tokens' q
 * heads, or their share when a token's row spans several blocks. V is staged first, by the write's
 * own step; K is staged as it is rotated, before the q heads, whose loop is the long one. Angles
 * are held for at most SY_ROPE_GPU_FUSED_PAIRS (token, pair) at once, beside the stage, so a tile
 * whose tokens have more is rotated in batches of tokens. */
template <int LAYOUT, int STORE, int RW, int SRC>
static __global__
__launch_bounds__(SY_ROPE_GPU_THREADS, SY_ROPE_GPU_FUSED_MIN_BLOCKS(STORE)) void sy_rope_gpu_kv_kernel(
    const sy_rope_gpu_freqs f, const sy_rope_gpu_args a, const sy_kv_gpu_pool pool, const sy_kv_gpu_rows v_src,
    const sy_kv_gpu_index ix, const sy_kv_gpu_launch l)
{
    SY_GPU_DYNAMIC_SHARED(float, sy_rope_angles);
    __shared__ sy_kv_gpu_stage s;
    const uint32_t half = f.half, batch = sy_rope_gpu_fused_batch(l, half);
    float *cs = sy_rope_angles, *sn = sy_rope_angles + batch * half;
    const sy_kv_gpu_tile tl = sy_kv_gpu_this_tile<STORE>(l, pool.dims, ix.tokens);
    sy_kv_gpu_tile_fill<LAYOUT, STORE, SRC, false>(tl, v_src, ix, pool, s);

    const uint32_t q_per = (a.q.heads + gridDim.y - 1) / gridDim.y, q0 = blockIdx.y * q_per;
    const uint32_t q_heads = q0 < a.q.heads ? (a.q.heads - q0 < q_per ? a.q.heads - q0 : q_per) : 0;
    const uint32_t pairs = half / RW, heads = tl.units / tl.chunks, h0 = tl.r0 / tl.chunks;
    for (uint32_t b0 = 0; b0 < tl.tokens; b0 += batch) {
        const uint32_t n = tl.tokens - b0 < batch ? tl.tokens - b0 : batch;
        if (b0 > 0)
            __syncthreads(); /* the previous batch is done with the angles */
        sy_rope_gpu_angles(f, a, tl.t0 + b0, n, cs, sn);

        const uint32_t units = n * heads * pairs;
        for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) {
            const uint32_t pc = u % pairs, hh = u / pairs % heads, jb = u / (pairs * heads), j = b0 + jb;
            if (tl.t0 + j >= a.tokens)
                continue;
            float first[RW], second[RW];
            sy_rope_gpu_rotate<RW>(a.k, tl.t0 + j, h0 + hh, pc * RW, half, cs + jb * half, sn + jb * half, first,
                                   second);
            sy_kv_gpu_tile_put<STORE, RW>(tl, s.k, j, hh, pc * RW, first, pool.k_scale);
            sy_kv_gpu_tile_put<STORE, RW>(tl, s.k, j, hh, half + pc * RW, second, pool.k_scale);
        }
        if (q_heads)
            sy_rope_gpu_rotate_heads<RW>(a.q, a, half, tl.t0 + b0, n, q0, q_heads, cs, sn);
    }
    __syncthreads();
    sy_kv_gpu_tile_store<LAYOUT, STORE>(pool, tl, s);
}

/* ------------------------------------------------------------------------------------------ */
/* host side                                                                                   */

static inline void sy_rope_gpu_freqs_of(const sy_rope_params *p, sy_rope_gpu_freqs *f)
{
    memset(f, 0, sizeof *f);
    f->half = p->head_dim / 2;
    for (uint32_t i = 0; i < f->half; i++)
        f->inv_freq[i] = sy_rope_inv_freq(p, i);
    f->concentration = sy_rope_concentration(p);
}

static inline sy_rope_gpu_tensor sy_rope_gpu_tensor_of(const sy_tensor *t)
{
    sy_rope_gpu_tensor x;
    x.data = t->data;
    x.s0 = t->stride[0];
    x.s1 = t->stride[1];
    x.heads = (uint32_t)t->shape[1];
    x.dtype = t->dtype;
    x.vec = sy_gpu_aligned16(t->data, sy_dtype_size(t->dtype), t->stride[0], t->stride[1]);
    return x;
}

static inline sy_rope_gpu_args sy_rope_gpu_args_of(const sy_rope_args *r)
{
    sy_rope_gpu_args a;
    a.q = sy_rope_gpu_tensor_of(&r->q);
    a.k = sy_rope_gpu_tensor_of(&r->k);
    a.positions = (const int32_t *)r->positions.data;
    a.positions_s0 = r->positions.stride[0];
    a.tokens = r->positions.shape[0];
    return a;
}

/* Rotated pairs a unit handles: 8 (16-byte runs of bf16) when half allows, else 1. */
static inline void sy_rope_gpu_launch(const sy_rope_gpu_freqs &f, const sy_rope_gpu_args &a, gpuStream_t stream)
{
    const dim3 grid((unsigned)((a.tokens + SY_ROPE_GPU_TOKENS - 1) / SY_ROPE_GPU_TOKENS));
    const size_t smem = 2 * SY_ROPE_GPU_TOKENS * f.half * sizeof(float);
    if (f.half % 8 == 0)
        SY_GPU_LAUNCH(grid, SY_ROPE_GPU_THREADS, smem, stream, sy_rope_gpu_kernel<8>)(f, a);
    else
        SY_GPU_LAUNCH(grid, SY_ROPE_GPU_THREADS, smem, stream, sy_rope_gpu_kernel<1>)(f, a);
}

/* Fused: a unit rotates one 16-byte run of the pool's store dtype (so that it stages whole units)
 * when half is a multiple of it, else one pair. v's dtype is a kernel parameter, as in the write. */
template <int LAYOUT, int STORE, int RW>
static void sy_rope_gpu_kv_launch_rw(const sy_rope_gpu_freqs &f, const sy_rope_gpu_args &a, const sy_kv_gpu_pool &pool,
                                     const sy_kv_gpu_rows &v_src, const sy_kv_gpu_index &ix, const sy_kv_gpu_launch &l,
                                     gpuStream_t stream)
{
    const size_t smem = 2 * (size_t)sy_rope_gpu_fused_batch(l, f.half) * f.half * sizeof(float);
    constexpr int BF16 = SY_DTYPE_BF16, F32 = SY_DTYPE_F32;
    if (v_src.dtype == BF16)
        SY_GPU_LAUNCH(l.grid, SY_ROPE_GPU_THREADS, smem, stream, sy_rope_gpu_kv_kernel<LAYOUT, STORE, RW, BF16>)(
            f, a, pool, v_src, ix, l);
    else
        SY_GPU_LAUNCH(l.grid, SY_ROPE_GPU_THREADS, smem, stream, sy_rope_gpu_kv_kernel<LAYOUT, STORE, RW, F32>)(
            f, a, pool, v_src, ix, l);
}

template <int LAYOUT, int STORE>
static void sy_rope_gpu_kv_launch_store(const sy_rope_gpu_freqs &f, const sy_rope_gpu_args &a, const sy_kv_gpu_pool &pool,
                                        const sy_kv_gpu_rows &v_src, const sy_kv_gpu_index &ix, const sy_kv_gpu_launch &l,
                                        gpuStream_t stream)
{
    constexpr int PER = sy_elems16<STORE>;
    if (f.half % PER == 0)
        sy_rope_gpu_kv_launch_rw<LAYOUT, STORE, PER>(f, a, pool, v_src, ix, l, stream);
    else
        sy_rope_gpu_kv_launch_rw<LAYOUT, STORE, 1>(f, a, pool, v_src, ix, l, stream);
}

template <int LAYOUT>
static void sy_rope_gpu_kv_launch_layout(const sy_rope_gpu_freqs &f, const sy_rope_gpu_args &a, int32_t store,
                                         const sy_kv_gpu_pool &pool, const sy_kv_gpu_rows &v_src,
                                         const sy_kv_gpu_index &ix, const sy_kv_gpu_launch &l, gpuStream_t stream)
{
    if (store == SY_DTYPE_F32)
        sy_rope_gpu_kv_launch_store<LAYOUT, SY_DTYPE_F32>(f, a, pool, v_src, ix, l, stream);
    else if (store == SY_DTYPE_BF16)
        sy_rope_gpu_kv_launch_store<LAYOUT, SY_DTYPE_BF16>(f, a, pool, v_src, ix, l, stream);
    else
        sy_rope_gpu_kv_launch_store<LAYOUT, SY_DTYPE_FP8_E4M3>(f, a, pool, v_src, ix, l, stream);
}

static inline void sy_rope_gpu_kv_launch(const sy_rope_gpu_freqs &f, const sy_rope_gpu_args &a, int32_t store,
                                         const sy_kv_gpu_pool &pool, const sy_kv_gpu_rows &v_src,
                                         const sy_kv_gpu_index &ix, const sy_kv_gpu_launch &l, gpuStream_t stream)
{
    if (pool.dims.layout == SY_LAYOUT_VECTORIZED_5D)
        sy_rope_gpu_kv_launch_layout<SY_LAYOUT_VECTORIZED_5D>(f, a, store, pool, v_src, ix, l, stream);
    else
        sy_rope_gpu_kv_launch_layout<SY_LAYOUT_NHD>(f, a, store, pool, v_src, ix, l, stream);
}

#endif
