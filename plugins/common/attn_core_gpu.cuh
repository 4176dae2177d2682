/* What the GPU attention kernels share: the online-softmax step over one row of a score tile, the
 * final normalization with an optional sink, segment and block reductions written for any warp
 * width, and the element loads of K/V tiles. The arithmetic follows the host core
 * (attn_cpu_core.h): s = scale * q.k; per tile m' = max(m, max s), l = l e^(m - m') + sum e^(s - m'),
 * acc = acc e^(m - m') + sum e^(s - m') v; out = w acc / (w l + e^(sink - M)) with
 * M = max(m, sink), w = e^(m - M). Summation orders differ from the host's, so results agree within
 * f32 rounding, not bit for bit.
 *
 * fp8 K/V: the dequant scales are folded out of the inner loops (k_scale into the score scale,
 * v_scale into the output), which is the same product up to rounding. */
#ifndef SY_ATTN_CORE_GPU_CUH
#define SY_ATTN_CORE_GPU_CUH

#include <math.h>

#include "gpu_warp.h"
#include "sy_elem_gpu.cuh"

enum {
    SY_ATTN_GPU_THREADS = 128,    /* every attention kernel; a multiple of both warp widths */
    SY_ATTN_GPU_HEAD_DIM_MAX = 128 /* largest head dim the tiles are built for (64 and 128 buckets) */
};

/* What decode and prefill calls share: q and out ([rows, Hq, D] of one dtype, f32 or bf16, unit
 * stride along D), the sinks, the scales (fp8: k_scale folded into the score scale, v_scale into the
 * output) and the window. */
typedef struct sy_attn_gpu_call {
    const void *q;
    int64_t q_s0, q_s1;
    void *out;
    int64_t out_s0, out_s1;
    int32_t io_dtype;
    int32_t window;
    const float *sinks; /* NULL: none */
    int64_t sinks_s0;
    float score_scale, out_scale;
} sy_attn_gpu_call;

static inline sy_attn_gpu_call sy_attn_gpu_call_of(const sy_tensor *q, const sy_tensor *out, const sy_tensor *sinks,
                                                   float scale, int32_t window, int32_t kv_dtype, float k_scale,
                                                   float v_scale)
{
    const bool fp8 = kv_dtype == SY_DTYPE_FP8_E4M3;
    sy_attn_gpu_call c;
    c.q = q->data;
    c.q_s0 = q->stride[0];
    c.q_s1 = q->stride[1];
    c.out = out->data;
    c.out_s0 = out->stride[0];
    c.out_s1 = out->stride[1];
    c.io_dtype = q->dtype;
    c.window = window;
    c.sinks = (const float *)sinks->data;
    c.sinks_s0 = sinks->data ? sinks->stride[0] : 0;
    c.score_scale = scale * (fp8 ? k_scale : 1.0f);
    c.out_scale = fp8 ? v_scale : 1.0f;
    return c;
}

/* Max / sum over aligned segments of SEG lanes (SEG a power of two, at most 32, so a segment never
 * spans two warps of 32 or two halves of a wavefront of 64); every lane gets the result. */
template <int SEG>
SY_DEV float sy_seg_max(float x)
{
#pragma unroll
    for (int mask = SEG / 2; mask > 0; mask /= 2)
        x = fmaxf(x, sy_shfl_xor(x, mask));
    return x;
}

template <int SEG>
SY_DEV float sy_seg_sum(float x)
{
#pragma unroll
    for (int mask = SEG / 2; mask > 0; mask /= 2)
        x += sy_shfl_xor(x, mask);
    return x;
}

/* One online-softmax step of a row: `row` holds the tile's scores (-inf where masked), SEG
 * threads share it, each reading n = lane + SEG * i for i < PER and n < count. Scores are replaced
 * by p = e^(s - m'); lane 0 updates m, l and writes alpha = e^(m - m') (1 when m holds, including
 * a row that has seen no key yet). */
template <int SEG, int PER>
SY_DEV void sy_attn_gpu_softmax_step(float *row, int count, int lane, float *m, float *l, float *alpha)
{
    float s[PER];
    float tile_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int n = lane + SEG * i;
        s[i] = n < count ? row[n] : -INFINITY;
        tile_max = fmaxf(tile_max, s[i]);
    }
    tile_max = sy_seg_max<SEG>(tile_max);
    const float m_old = *m, m_new = fmaxf(m_old, tile_max);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int n = lane + SEG * i;
        const float p = s[i] == -INFINITY ? 0.0f : expf(s[i] - m_new);
        if (n < count)
            row[n] = p;
        sum += p;
    }
    sum = sy_seg_sum<SEG>(sum);
    /* Every lane has read m before lane 0 replaces it (the sum depends on it); the warp barrier
     * makes that ordering explicit to the memory model and to race checkers. */
    sy_syncwarp();
    if (lane == 0) {
        const float a = m_new == m_old ? 1.0f : expf(m_old - m_new);
        *l = *l * a + sum;
        *m = m_new;
        *alpha = a;
    }
}

/* What a row's normalization takes from its (m, l) and optional sink logit (the host's
 * sy_attn_cpu_combine for one part): each output element is w acc / den, or 0 in a row with neither
 * keys nor sink. Worked out once a row where a thread holds several of its elements (the
 * exponentials are most of a short call's epilogue otherwise). */
typedef struct sy_attn_gpu_norm {
    float w, den;
    bool empty;
} sy_attn_gpu_norm;

SY_DEV sy_attn_gpu_norm sy_attn_gpu_norm_of(float m, float l, const float *sink)
{
    sy_attn_gpu_norm n = {0.0f, 1.0f, true};
    float M = l > 0.0f ? m : -INFINITY;
    if (sink && *sink > M)
        M = *sink;
    if (M == -INFINITY)
        return n;
    n.empty = false;
    n.w = l > 0.0f ? expf(m - M) : 0.0f;
    n.den = n.w * l;
    if (sink)
        n.den += expf(*sink - M);
    return n;
}

SY_DEV float sy_attn_gpu_normalized(const sy_attn_gpu_norm &n, float acc)
{
    return n.empty ? 0.0f : n.w * acc / n.den;
}

/* The factor that normalizes a row's accumulators: w / den (0 in an empty row). One multiply an
 * element instead of a division; differs from sy_attn_gpu_normalized by f32 rounding only. */
SY_DEV float sy_attn_gpu_norm_factor(const sy_attn_gpu_norm &n)
{
    return n.empty ? 0.0f : n.w / n.den;
}

/* The normalized output element of a row from its (m, l, acc) and optional sink logit. */
SY_DEV float sy_attn_gpu_finish(float m, float l, float acc, const float *sink)
{
    return sy_attn_gpu_normalized(sy_attn_gpu_norm_of(m, l, sink), acc);
}

/* N elements of DT at p (aligned to min(16, N * bytes)), as f32. */
template <int DT, int N>
SY_DEV void sy_ld_decode(const void *p, float *out)
{
    sy_gpu_load_act_run_as<N, DT>(p, 0, N, true, out);
}

/* d0 . d1 of four floats, accumulated onto acc. */
SY_DEV float sy_dot4(float acc, const float4 &a, const float *b)
{
    acc = fmaf(a.x, b[0], acc);
    acc = fmaf(a.y, b[1], acc);
    acc = fmaf(a.z, b[2], acc);
    return fmaf(a.w, b[3], acc);
}

/* One 16-byte chunk of a K/V row of a linear or paged source: the whole chunk when rows are
 * 16-byte aligned, else its n valid elements one by one (zeros past them). */
template <int DT>
SY_DEV uint4 sy_attn_ld_chunk(const void *base, uint64_t elem, int n, bool aligned)
{
    if (aligned && n == sy_elems16<DT>)
        return sy_ld_raw<16>((const char *)base + elem * sy_elem_size<DT>);
    return sy_ld_elems_raw<DT>(base, elem, n);
}

#endif
