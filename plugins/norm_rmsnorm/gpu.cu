/* RMSNorm with optional fused residual add and zero padding, on the GPU (cuda and hip from this
 * source). The semantics are the host version's (cpu.c): s = f32(x) (+ f32(residual)), the sum of
 * s^2 over the N real columns in f32, r = 1 / sqrt(sum / N + eps), out = cast(s * r * w) with zeros
 * to Nout, residual_out = cast(s).
 *
 * A group of threads owns a row: 64 threads (4 rows a block) up to 1536 columns, more for wider
 * rows, so that each thread holds at most 3 chunks of 8 columns (NORM_MAX_CACHE past 512 threads);
 * calls of fewer than NORM_PACK_ROWS rows take up to one chunk a thread.
 * A thread keeps the s of its chunks in registers between the sum and the output, so x and
 * residual are read once (rows wider than the cache allows read the rest again, from L2). The
 * kernel is instantiated per number of cached chunks, so that a row of 3 chunks a thread does not
 * hold registers for 4: at 16384 x 2880 that is 64 registers instead of 86, 4 blocks of 256
 * threads an SM instead of 2. Chunks are 16-byte loads and stores
 * (8 bf16, or 2 x 4 f32) when every row of every tensor is 16-byte aligned and N and Nout are
 * multiples of 8; otherwise element by element. The sum is per thread in column order, then per
 * warp by the butterfly of gpu_warp.h, then over the group's warps in warp order: a fixed order, so
 * repeated runs agree bit for bit. residual_out is one f32 add rounded once, equal to the host's bit
 * for bit; out differs from it only by the order of the sum.
 *
 * Each element is read by the thread that writes it, before it writes it, so residual_out may alias
 * residual (the engine's in-place residual stream), as on the host. */
#include <math.h>

#include "gpu.h"
#include "gpu_runtime.h"
#include "gpu_warp.h"
#include "sy_numeric.h"
extern "C" {
#include "sy_op_check.h"
}

#define NORM_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

enum {
    NORM_CHUNK = 8,       /* columns per load: 16 bytes of bf16 */
    NORM_MAX_CACHE = 4,   /* chunks a thread keeps in registers, at most */
    NORM_MIN_GROUP = 64,  /* threads per row: a multiple of both warp widths */
    NORM_MAX_GROUP = 512, /* 128 registers a thread at most: the cache stays in registers */
    NORM_BLOCK = 256,     /* threads per block when rows are packed several to a block */
    NORM_PACK_ROWS = 4096 /* from this many rows on, pack rows to NORM_BLOCK threads; fewer rows get a block each */
};

typedef struct norm_gpu_args {
    const void *x, *residual, *weight;
    void *out, *residual_out;
    int64_t x_stride, residual_stride, out_stride, residual_out_stride; /* elements; 0 for a single row */
    int32_t x_dtype, residual_dtype, weight_dtype, out_dtype, residual_out_dtype;
    int32_t vector; /* 1: 16-byte chunks (see the file's comment) */
    int64_t rows;
    uint32_t cols, cols_out, group;
    float eps;
} norm_gpu_args;

static __device__ __forceinline__ const char *norm_row(const void *base, int64_t row, int64_t stride, int32_t dtype)
{
    return (const char *)base + row * stride * (dtype == SY_DTYPE_BF16 ? 2 : 4);
}

/* Columns n0 .. n0 + 7 of a row into v (zeros past `cols`). */
static __device__ __forceinline__ void norm_load8(const char *row, int32_t dtype, uint32_t n0, uint32_t cols,
                                                  int vector, float v[NORM_CHUNK])
{
    if (vector && dtype == SY_DTYPE_BF16) {
        const uint4 u = *(const uint4 *)(row + 2u * n0);
        const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[2 * i] = sy_bf16_to_f32((uint16_t)(words[i] & 0xFFFFu));
            v[2 * i + 1] = sy_bf16_to_f32((uint16_t)(words[i] >> 16));
        }
    } else if (vector) {
        const float4 lo = *(const float4 *)(row + 4u * n0), hi = *(const float4 *)(row + 4u * n0 + 16u);
        v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
    } else {
#pragma unroll
        for (int i = 0; i < NORM_CHUNK; i++) {
            const uint32_t n = n0 + (uint32_t)i;
            v[i] = n >= cols                  ? 0.0f
                   : dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)row)[n])
                                            : ((const float *)row)[n];
        }
    }
}

/* v into columns n0 .. min(n0 + 8, cols) - 1 of a row, rounded to its dtype. */
static __device__ __forceinline__ void norm_store8(char *row, int32_t dtype, uint32_t n0, uint32_t cols, int vector,
                                                   const float v[NORM_CHUNK])
{
    if (vector && dtype == SY_DTYPE_BF16) {
        uint32_t words[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            words[i] = (uint32_t)sy_f32_to_bf16(v[2 * i]) | (uint32_t)sy_f32_to_bf16(v[2 * i + 1]) << 16;
        *(uint4 *)(row + 2u * n0) = make_uint4(words[0], words[1], words[2], words[3]);
    } else if (vector) {
        *(float4 *)(row + 4u * n0) = make_float4(v[0], v[1], v[2], v[3]);
        *(float4 *)(row + 4u * n0 + 16u) = make_float4(v[4], v[5], v[6], v[7]);
    } else {
#pragma unroll
        for (int i = 0; i < NORM_CHUNK; i++) {
            const uint32_t n = n0 + (uint32_t)i;
            if (n >= cols)
                break;
            if (dtype == SY_DTYPE_BF16)
                ((uint16_t *)row)[n] = sy_f32_to_bf16(v[i]);
            else
                ((float *)row)[n] = v[i];
        }
    }
}

/* s = x (+ residual) for one chunk. */
static __device__ __forceinline__ void norm_sum_inputs(const norm_gpu_args &a, const char *x, const char *res,
                                                       uint32_t n0, float s[NORM_CHUNK])
{
    norm_load8(x, a.x_dtype, n0, a.cols, a.vector, s);
    if (res) {
        float r[NORM_CHUNK];
        norm_load8(res, a.residual_dtype, n0, a.cols, a.vector, r);
#pragma unroll
        for (int i = 0; i < NORM_CHUNK; i++)
            s[i] += r[i];
    }
}

/* Sum over the thread's group (a.group threads, whole warps, consecutive); every thread of the
 * block must call it. */
static __device__ __forceinline__ float norm_group_sum(float v, uint32_t group, float *warp_sums)
{
    const uint32_t warp = threadIdx.x / SY_WARP_SIZE, lane = threadIdx.x % SY_WARP_SIZE;
    v = sy_warp_sum(v);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    const uint32_t warps = group / SY_WARP_SIZE, first = threadIdx.x / group * warps;
    float total = 0.0f;
    for (uint32_t i = 0; i < warps; i++)
        total += warp_sums[first + i];
    return total;
}

/* out (and residual_out) of one chunk whose s is known; columns past N within it get zeros. */
static __device__ __forceinline__ void norm_emit_chunk(const norm_gpu_args &a, uint32_t n0, const float s[NORM_CHUNK],
                                                       float r, char *out, char *res_out)
{
    float w[NORM_CHUNK], y[NORM_CHUNK];
    norm_load8((const char *)a.weight, a.weight_dtype, n0, a.cols, a.vector, w);
#pragma unroll
    for (int q = 0; q < NORM_CHUNK; q++)
        y[q] = n0 + (uint32_t)q < a.cols ? s[q] * r * w[q] : 0.0f;
    norm_store8(out, a.out_dtype, n0, a.cols_out, a.vector, y);
    if (res_out)
        norm_store8(res_out, a.residual_out_dtype, n0, a.cols, a.vector, s);
}

template <int CACHED_CHUNKS>
static __global__ void __launch_bounds__(NORM_MAX_GROUP) norm_gpu_kernel(norm_gpu_args a)
{
    __shared__ float warp_sums[SY_MAX_WARPS_PER_BLOCK];
    const uint32_t lane = threadIdx.x % a.group;
    const int64_t m = (int64_t)blockIdx.x * (blockDim.x / a.group) + threadIdx.x / a.group;
    /* Threads past the last row still take part in the barrier of the sum. */
    const bool live = m < a.rows;
    const int64_t row = live ? m : 0;
    const char *x = norm_row(a.x, row, a.x_stride, a.x_dtype);
    const char *res = a.residual ? norm_row(a.residual, row, a.residual_stride, a.residual_dtype) : NULL;
    const uint32_t chunks = (a.cols + NORM_CHUNK - 1) / NORM_CHUNK;
    const uint32_t chunks_out = (a.cols_out + NORM_CHUNK - 1) / NORM_CHUNK;

    float cache[CACHED_CHUNKS][NORM_CHUNK];
    float squares = 0.0f;
#pragma unroll
    for (int i = 0; i < CACHED_CHUNKS; i++) {
        const uint32_t c = lane + (uint32_t)i * a.group;
        if (live && c < chunks) {
            norm_sum_inputs(a, x, res, c * NORM_CHUNK, cache[i]);
#pragma unroll
            for (int q = 0; q < NORM_CHUNK; q++)
                squares += cache[i][q] * cache[i][q];
        }
    }
    for (uint32_t c = lane + CACHED_CHUNKS * a.group; live && c < chunks; c += a.group) {
        float s[NORM_CHUNK];
        norm_sum_inputs(a, x, res, c * NORM_CHUNK, s);
#pragma unroll
        for (int q = 0; q < NORM_CHUNK; q++)
            squares += s[q] * s[q];
    }
    const float total = norm_group_sum(squares, a.group, warp_sums);
    if (!live)
        return;
    const float r = 1.0f / sqrtf(total / (float)a.cols + a.eps);

    char *out = (char *)norm_row(a.out, m, a.out_stride, a.out_dtype);
    char *res_out = a.residual_out ? (char *)norm_row(a.residual_out, m, a.residual_out_stride, a.residual_out_dtype)
                                   : NULL;
    /* Output chunks: cached ones first (compile-time indices keep the cache in registers), then
     * the rest of the row, then the zero padding. */
#pragma unroll
    for (int i = 0; i < CACHED_CHUNKS; i++) {
        const uint32_t c = lane + (uint32_t)i * a.group;
        if (c < chunks)
            norm_emit_chunk(a, c * NORM_CHUNK, cache[i], r, out, res_out);
    }
    for (uint32_t c = lane + CACHED_CHUNKS * a.group; c < chunks; c += a.group) {
        float s[NORM_CHUNK];
        norm_sum_inputs(a, x, res, c * NORM_CHUNK, s);
        norm_emit_chunk(a, c * NORM_CHUNK, s, r, out, res_out);
    }
    /* Chunks past the real columns (a partial last chunk was finished above with zeros). */
    const float zeros[NORM_CHUNK] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (uint32_t c = chunks + lane; c < chunks_out; c += a.group)
        norm_store8(out, a.out_dtype, c * NORM_CHUNK, a.cols_out, a.vector, zeros);
}

/* ------------------------------------------------------------------------------------------ */
/* host side                                                                                   */

static sy_status norm_check_matrix(const char *name, const sy_tensor *t, int64_t M, int64_t N, sy_error *err)
{
    const int64_t want[2] = {M, N};
    return sy_op_check_dense_tensor("norm rmsnorm", name, t, NORM_DTYPES, 2, want, 1, err);
}

static sy_status norm_check_args(const sy_norm_args *a, int64_t *nout, sy_error *err)
{
    static const char op[] = "norm rmsnorm";
    if (!a || a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_norm_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof *a);
    if (a->x.ndim != 2)
        return sy_op_fail(err, SY_E_INVALID, "%s: x has %d dimensions, expected 2 ([M, N])", op, (int)a->x.ndim);
    const int64_t M = a->x.shape[0], N = a->x.shape[1];
    if (a->pad_to_multiple > SY_NORM_RMSNORM_GPU_MAX_PAD)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: pad_to_multiple %u exceeds the supported %d", op,
                          a->pad_to_multiple, SY_NORM_RMSNORM_GPU_MAX_PAD);
    const int64_t p = a->pad_to_multiple > 1 ? a->pad_to_multiple : 1;
    *nout = (N + p - 1) / p * p;
    if (!(a->eps >= 0.0f) || isinf(a->eps))
        return sy_op_fail(err, SY_E_INVALID, "%s: eps %g must be finite and >= 0", op, (double)a->eps);
    if (*nout > UINT32_MAX / 2)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld output columns exceed the kernel's 32-bit column index", op,
                          (long long)*nout);
    const int64_t want_w[1] = {N};
    sy_status st = norm_check_matrix("x", &a->x, M, N, err);
    if (st == SY_OK)
        st = sy_op_check_dense_tensor(op, "weight", &a->weight, NORM_DTYPES, 1, want_w, 0, err);
    if (st == SY_OK)
        st = norm_check_matrix("out", &a->out, M, *nout, err);
    if (st == SY_OK && a->residual.data)
        st = norm_check_matrix("residual", &a->residual, M, N, err);
    if (st == SY_OK && a->residual.data && !a->residual_out.data)
        return sy_op_fail(err, SY_E_INVALID, "%s: residual is given but residual_out is missing", op);
    if (st == SY_OK && a->residual_out.data)
        st = norm_check_matrix("residual_out", &a->residual_out, M, N, err);
    return st;
}

/* Rows of a single-row call may have any stride in the view; the kernel then never uses it. */
static int64_t norm_stride(const sy_tensor *t, int64_t rows)
{
    return t->data && rows > 1 ? t->stride[0] : 0;
}

/* 16-byte chunks are safe when every row start of the tensor is 16-byte aligned. */
static int norm_rows_aligned(const sy_tensor *t, int64_t stride)
{
    if (!t->data)
        return 1;
    return ((uintptr_t)t->data % 16u) == 0 && (stride * (int64_t)sy_dtype_size(t->dtype)) % 16 == 0;
}

extern "C" sy_status sy_norm_rmsnorm_gpu(void *ctx, sy_stream stream, const sy_norm_args *in, sy_error *err)
{
    (void)ctx;
    int64_t nout = 0;
    sy_status st = norm_check_args(in, &nout, err);
    if (st != SY_OK)
        return st;
    const int64_t M = in->x.shape[0], N = in->x.shape[1];
    if (M == 0 || nout == 0)
        return SY_OK;

    norm_gpu_args a;
    a.x = in->x.data;
    a.residual = in->residual.data;
    a.weight = in->weight.data;
    a.out = in->out.data;
    a.residual_out = in->residual_out.data;
    a.x_stride = norm_stride(&in->x, M);
    a.residual_stride = norm_stride(&in->residual, M);
    a.out_stride = norm_stride(&in->out, M);
    a.residual_out_stride = norm_stride(&in->residual_out, M);
    a.x_dtype = in->x.dtype;
    a.residual_dtype = in->residual.dtype;
    a.weight_dtype = in->weight.dtype;
    a.out_dtype = in->out.dtype;
    a.residual_out_dtype = in->residual_out.dtype;
    a.rows = M;
    a.cols = (uint32_t)N;
    a.cols_out = (uint32_t)nout;
    a.eps = in->eps;
    a.vector = N % NORM_CHUNK == 0 && nout % NORM_CHUNK == 0 && norm_rows_aligned(&in->x, a.x_stride) &&
               norm_rows_aligned(&in->residual, a.residual_stride) && norm_rows_aligned(&in->weight, 0) &&
               norm_rows_aligned(&in->out, a.out_stride) &&
               norm_rows_aligned(&in->residual_out, a.residual_out_stride);

    /* Threads per row: the smallest power of two that leaves at most 3 chunks to a thread; with
     * few rows (a decode step's), at most one, since there the latency of a thread's chunks is the
     * time of the call. */
    const int64_t chunks = (N + NORM_CHUNK - 1) / NORM_CHUNK, chunks_a_thread = M >= NORM_PACK_ROWS ? 3 : 1;
    uint32_t group = NORM_MIN_GROUP;
    while (group < NORM_MAX_GROUP && (int64_t)group * chunks_a_thread < chunks)
        group *= 2;
    a.group = group;
    const uint32_t rows_per_block = M >= NORM_PACK_ROWS && group < NORM_BLOCK ? NORM_BLOCK / group : 1;
    const int64_t blocks = (M + rows_per_block - 1) / rows_per_block;
    if (blocks > 0x7FFFFFFF)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "norm rmsnorm: %lld rows exceed one launch", (long long)M);
    const int64_t per_thread = (chunks + group - 1) / group;
    const dim3 grid((unsigned)blocks), block(group * rows_per_block);
    const gpuStream_t s = sy_gpu_stream(stream);
    if (per_thread <= 1)
        norm_gpu_kernel<1><<<grid, block, 0, s>>>(a);
    else if (per_thread == 2)
        norm_gpu_kernel<2><<<grid, block, 0, s>>>(a);
    else if (per_thread == 3)
        norm_gpu_kernel<3><<<grid, block, 0, s>>>(a);
    else
        norm_gpu_kernel<NORM_MAX_CACHE><<<grid, block, 0, s>>>(a);
    SY_GPU_CHECK_LAUNCH(err, "norm_gpu_kernel");
    return SY_OK;
}

/* Host pass only: hipcc would otherwise emit this external const table into the device code. */
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
extern "C" const sy_norm_ops sy_norm_rmsnorm_gpu_ops = {sizeof(sy_norm_ops), 0, sy_norm_rmsnorm_gpu};
#endif
