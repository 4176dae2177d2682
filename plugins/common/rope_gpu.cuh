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
 * rotations in place. A thread loads several units before it rotates the first (their elements
 * stay packed until then), so it waits on one memory latency for all of them. Fused: a block is
 * one of kv_layout.write's tiles (kv_store_gpu.cuh); the rotated K run is rounded to k's dtype (what rope leaves in k), written to k, and that same value
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
    SY_ROPE_GPU_FUSED_PAIRS = 2048, /* fused: (token, pair) angles held at once, 16 KB beside the stage */
    /* Loads a thread has in flight (sy_rope_gpu_rotate_loop). The plain kernel, H200, 16384 tokens
     * at gpt-oss shapes, bf16: one unit at a time 111.0 us, 128 bytes (4 units) 105.0 us, 256 bytes
     * 123.9 us (registers leave fewer warps). */
    SY_ROPE_GPU_BYTES = 128,
    SY_ROPE_GPU_FUSED_BYTES = 64 /* the fused kernel: see SY_ROPE_GPU_FUSED_MIN_BLOCKS */
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

/* Blocks an SM the fused kernel is compiled for: 64 registers a thread, which hold two bf16 units'
 * loads in flight (SY_ROPE_GPU_FUSED_BYTES) without spilling. H200, 16384 tokens at gpt-oss shapes,
 * bf16 pool: one unit at a time in 48 registers (10 blocks) 134.7 us (nhd) / 138.0 us
 * (vectorized_5d); two at a time in 64 registers 113.2 / 115.9 us; four at a time in 80 registers
 * (6 blocks) 124.3 / 129.5 us. fp8 pools (16-element units, one at a time) spill 12 bytes at one
 * V dtype. */
#define SY_ROPE_GPU_FUSED_MIN_BLOCKS 8

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

/* One unit of a rotation: pairs i0 .. i0 + RW - 1 of the row of x at element `row` (token t, head
 * h), rotated with angle row j of the block's cos / sin; ok is false past the end of the work. */
typedef struct sy_rope_gpu_unit {
    int64_t row;
    uint32_t h, i0, j;
    bool ok;
} sy_rope_gpu_unit;

/* RW consecutive elements of x from element i as loaded, converted to f32 only when used, so that
 * a thread's loads in flight hold packed elements (a run of 8 bf16: 4 registers, not 8). DT 0 is
 * x's dtype read at run time, element by element unless x allows 16-byte runs; an activation dtype
 * DT means whole runs of min(16, RW * bytes) bytes. */
template <int RW, int DT>
struct sy_rope_gpu_run {
    static constexpr int BYTES = DT ? RW * sy_elem_size<DT> : 0, PIECE = BYTES < 16 ? BYTES : 16;
    static constexpr int PIECES = DT ? BYTES / PIECE : 0, PER = DT ? PIECE / sy_elem_size<DT> : 1;
    uint4 raw[PIECES > 0 ? PIECES : 1];
    float f[DT ? 1 : RW];

    SY_DEV void load(const sy_rope_gpu_tensor &x, int64_t i)
    {
        if constexpr (DT == 0) {
            sy_gpu_load_act_run<RW>(x.data, x.dtype, i, RW, x.vec, f);
        } else {
#pragma unroll
            for (int p = 0; p < PIECES; p++)
                raw[p] = sy_ld_raw<PIECE>((const char *)x.data + (i + p * PER) * sy_elem_size<DT>);
        }
    }

    SY_DEV void values(float *out) const
    {
        if constexpr (DT == 0) {
#pragma unroll
            for (int e = 0; e < RW; e++)
                out[e] = f[e];
        } else {
#pragma unroll
            for (int p = 0; p < PIECES; p++)
                sy_unpack<DT, PER>(raw[p], out + p * PER);
        }
    }

    static SY_DEV void store(const sy_rope_gpu_tensor &x, int64_t i, const float *v)
    {
        if constexpr (DT == 0)
            sy_gpu_store_act_run<RW>(x.data, x.dtype, i, RW, x.vec, v);
        else
            sy_gpu_store_act_run_as<RW, DT>(x.data, i, RW, true, v);
    }
};

/* Rotates U units of x in place, every load issued before the first rotation waits on one: a
 * thread that loaded, rotated and stored one unit at a time waited on one memory latency a unit,
 * and q's heads are most of rope's bytes. Units that are not ok read x's first row (which every
 * call has) and store nothing. put(unit, first, second) receives each unit's rotated values as x
 * now holds them (rounded to its dtype): dims i0 + e and half + i0 + e. */
template <int RW, int DT, int U, class Put>
SY_DEV void sy_rope_gpu_rotate_units(const sy_rope_gpu_tensor &x, const sy_rope_gpu_unit (&u)[U], uint32_t half,
                                     const float *cs, const float *sn, Put put)
{
    using run = sy_rope_gpu_run<RW, DT>;
    run r1[U], r2[U];
#pragma unroll
    for (int i = 0; i < U; i++) {
        const int64_t at = u[i].ok ? u[i].row + u[i].i0 : 0;
        r1[i].load(x, at);
        r2[i].load(x, at + half);
    }
#pragma unroll
    for (int i = 0; i < U; i++) {
        if (!u[i].ok)
            continue;
        const float *c = cs + u[i].j * half + u[i].i0, *s = sn + u[i].j * half + u[i].i0;
        float x1[RW], x2[RW], first[RW], second[RW];
        r1[i].values(x1);
        r2[i].values(x2);
#pragma unroll
        for (int e = 0; e < RW; e++) {
            first[e] = sy_gpu_round_act(x.dtype, sy_rope_gpu_first(x1[e], x2[e], c[e], s[e]));
            second[e] = sy_gpu_round_act(x.dtype, sy_rope_gpu_second(x1[e], x2[e], c[e], s[e]));
        }
        run::store(x, u[i].row + u[i].i0, first);
        run::store(x, u[i].row + half + u[i].i0, second);
        put(u[i], first, second);
    }
}

/* The block's loop over units 0 .. units - 1 of x, unit n at where(n), U at a time per thread. */
template <int RW, int DT, int U, class Where, class Put>
SY_DEV void sy_rope_gpu_rotate_loop_as(const sy_rope_gpu_tensor &x, uint32_t units, uint32_t half, const float *cs,
                                       const float *sn, Where where, Put put)
{
    for (uint32_t n0 = threadIdx.x; n0 < units; n0 += U * blockDim.x) {
        sy_rope_gpu_unit u[U];
#pragma unroll
        for (int i = 0; i < U; i++) {
            const uint32_t n = n0 + (uint32_t)i * blockDim.x;
            u[i] = n < units ? where(n) : sy_rope_gpu_unit{0, 0, 0, 0, false};
        }
        sy_rope_gpu_rotate_units<RW, DT, U>(x, u, half, cs, sn, put);
    }
}

/* The block's loop over units 0 .. units - 1 of x, unit n at where(n): where x's rows allow
 * 16-byte runs and BYTES holds two units or more, each thread loads as many units at a time as fill
 * BYTES; otherwise one at a time (element by element where x's rows do not allow 16-byte runs). */
template <int RW, int BYTES, class Where, class Put>
SY_DEV void sy_rope_gpu_rotate_loop(const sy_rope_gpu_tensor &x, uint32_t units, uint32_t half, const float *cs,
                                    const float *sn, Where where, Put put)
{
    constexpr int BF16_UNITS = BYTES / (2 * RW * 2), F32_UNITS = BYTES / (2 * RW * 4);
    if constexpr (RW > 1 && BF16_UNITS > 1) {
        if (x.vec && x.dtype == SY_DTYPE_BF16)
            return sy_rope_gpu_rotate_loop_as<RW, SY_DTYPE_BF16, BF16_UNITS>(x, units, half, cs, sn, where, put);
    }
    if constexpr (RW > 1 && F32_UNITS > 1) {
        if (x.vec && x.dtype == SY_DTYPE_F32)
            return sy_rope_gpu_rotate_loop_as<RW, SY_DTYPE_F32, F32_UNITS>(x, units, half, cs, sn, where, put);
    }
    /* one unit at a time: its loads convert as they land, which needs no more registers than that */
    sy_rope_gpu_rotate_loop_as<RW, 0, 1>(x, units, half, cs, sn, where, put);
}

/* The units of heads [h0, h0 + heads) of x for the block's tokens t0 .. t0 + tokens - 1 (angle
 * rows 0 .. tokens - 1), BYTES of loads in flight per thread; put as in sy_rope_gpu_rotate_units. */
template <int RW, int BYTES, class Put>
SY_DEV void sy_rope_gpu_rotate_heads(const sy_rope_gpu_tensor &x, const sy_rope_gpu_args &a, uint32_t half, int64_t t0,
                                     uint32_t tokens, uint32_t h0, uint32_t heads, const float *cs, const float *sn,
                                     Put put)
{
    const uint32_t pairs = half / RW;
    const auto where = [&](uint32_t n) {
        const uint32_t pc = n % pairs, h = h0 + n / pairs % heads, j = n / (pairs * heads);
        const int64_t t = t0 + j;
        return sy_rope_gpu_unit{t * x.s0 + (int64_t)h * x.s1, h, pc * RW, j, t < a.tokens};
    };
    sy_rope_gpu_rotate_loop<RW, BYTES>(x, tokens * heads * pairs, half, cs, sn, where, put);
}

/* The rotated values of a unit that only rope itself needs: they are in x already. */
SY_DEV void sy_rope_gpu_in_place(const sy_rope_gpu_unit &, const float *, const float *) {}

template <int RW>
static __global__ __launch_bounds__(SY_ROPE_GPU_THREADS) void sy_rope_gpu_kernel(const sy_rope_gpu_freqs f,
                                                                                const sy_rope_gpu_args a)
{
    SY_GPU_DYNAMIC_SHARED(float, sy_rope_angles);
    float *cs = sy_rope_angles, *sn = sy_rope_angles + SY_ROPE_GPU_TOKENS * f.half;
    const int64_t t0 = (int64_t)blockIdx.x * SY_ROPE_GPU_TOKENS;
    sy_rope_gpu_angles(f, a, t0, SY_ROPE_GPU_TOKENS, cs, sn);
    sy_rope_gpu_rotate_heads<RW, SY_ROPE_GPU_BYTES>(a.q, a, f.half, t0, SY_ROPE_GPU_TOKENS, 0, a.q.heads, cs, sn,
                                                    sy_rope_gpu_in_place);
    sy_rope_gpu_rotate_heads<RW, SY_ROPE_GPU_BYTES>(a.k, a, f.half, t0, SY_ROPE_GPU_TOKENS, 0, a.k.heads, cs, sn,
                                                    sy_rope_gpu_in_place);
}

/* Fused: the tiles of kv_layout.write (sy_kv_gpu_plan), each block also rotating its tokens' q
 * heads, or their share when a token's row spans several blocks. V is staged first, by the write's
 * own step; K is staged as it is rotated, before the q heads, whose loop is the long one. Angles
 * are held for at most SY_ROPE_GPU_FUSED_PAIRS (token, pair) at once, beside the stage, so a tile
 * whose tokens have more is rotated in batches of tokens. */
template <int LAYOUT, int STORE, int RW, int SRC>
static __global__
__launch_bounds__(SY_ROPE_GPU_THREADS, SY_ROPE_GPU_FUSED_MIN_BLOCKS) void sy_rope_gpu_kv_kernel(
    const sy_rope_gpu_freqs f, const sy_rope_gpu_args a, const sy_kv_gpu_pool pool, const sy_kv_gpu_rows v_src,
    const sy_kv_gpu_index ix, const sy_kv_gpu_launch l)
{
    SY_GPU_DYNAMIC_SHARED(float, sy_rope_angles);
    __shared__ sy_kv_gpu_stage s;
    sy_gpu_wait_for_previous_kernel();
    const uint32_t half = f.half, batch = sy_rope_gpu_fused_batch(l, half);
    float *cs = sy_rope_angles, *sn = sy_rope_angles + batch * half;
    const sy_kv_gpu_tile tl = sy_kv_gpu_this_tile<STORE>(l, pool.dims, ix.tokens);
    sy_kv_gpu_tile_fill<LAYOUT, STORE, SRC, false>(tl, v_src, ix, pool, s);

    const uint32_t q_per = (a.q.heads + gridDim.y - 1) / gridDim.y, q0 = blockIdx.y * q_per;
    const uint32_t q_heads = q0 < a.q.heads ? (a.q.heads - q0 < q_per ? a.q.heads - q0 : q_per) : 0;
    const uint32_t heads = tl.units / tl.chunks, h0 = tl.r0 / tl.chunks;
    for (uint32_t b0 = 0; b0 < tl.tokens; b0 += batch) {
        const uint32_t n = tl.tokens - b0 < batch ? tl.tokens - b0 : batch;
        if (b0 > 0)
            __syncthreads(); /* the previous batch is done with the angles */
        sy_rope_gpu_angles(f, a, tl.t0 + b0, n, cs, sn);

        const auto stage = [&](const sy_rope_gpu_unit &u, const float *first, const float *second) {
            sy_kv_gpu_tile_put<STORE, RW>(tl, s.k, b0 + u.j, u.h - h0, u.i0, first, pool.k_scale);
            sy_kv_gpu_tile_put<STORE, RW>(tl, s.k, b0 + u.j, u.h - h0, half + u.i0, second, pool.k_scale);
        };
        sy_rope_gpu_rotate_heads<RW, SY_ROPE_GPU_FUSED_BYTES>(a.k, a, half, tl.t0 + b0, n, h0, heads, cs, sn, stage);
        if (q_heads)
            sy_rope_gpu_rotate_heads<RW, SY_ROPE_GPU_FUSED_BYTES>(a.q, a, half, tl.t0 + b0, n, q0, q_heads, cs, sn,
                                                                  sy_rope_gpu_in_place);
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
        SY_GPU_LAUNCH_CHAINED(l.grid, SY_ROPE_GPU_THREADS, smem, stream, sy_rope_gpu_kv_kernel<LAYOUT, STORE, RW, BF16>)(
            f, a, pool, v_src, ix, l);
    else
        SY_GPU_LAUNCH_CHAINED(l.grid, SY_ROPE_GPU_THREADS, smem, stream, sy_rope_gpu_kv_kernel<LAYOUT, STORE, RW, F32>)(
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
