/* RMSNorm with optional fused residual add and zero padding, on the GPU (cuda and hip from this
 * source). The semantics are the host version's (cpu.c): s = f32(x) (+ f32(residual)), the sum of
 * s^2 over the N real columns in f32, r = 1 / sqrt(sum / N + eps), out = cast(s * r * w) with zeros
 * to Nout, residual_out = cast(s).
 *
 * Work split. Columns go in chunks of 8 (16 bytes of bf16). A group of threads owns a row: a
 * multiple of 64 threads (whole warps at either warp width), sized from the chunks of the padded
 * output row, and chunk c is thread c % group's (c / group)-th, so that a warp reads and writes
 * consecutive 16-byte pieces. Calls of NORM_PACK_ROWS rows or more give a thread up to 3 chunks:
 * 2880 -> 3072 columns is 384 chunks, 3 for each of 128 threads, the last 8 threads' third being
 * 24 chunks of zero padding. Fewer rows (a decode step's) give a thread one chunk (384 threads a
 * row), since there the latency of one thread's chain is the time of the call. A block is one row
 * (two when a call of many rows has groups of 64 threads), so no row waits at a barrier for another.
 *
 * Latency. A thread issues every load of its row (x, residual and weight of each of its chunks)
 * before it uses any, so that a row costs one round trip to memory rather than one a chunk; then
 * it writes residual_out, which needs no sum, so those stores leave while the group reduces; then
 * out. It keeps s in registers from the sum to the stores, so x and residual are read once (rows
 * wider than NORM_MAX_CACHE chunks a thread read the rest again, from L2). The kernel is
 * instantiated per number of cached chunks, so that a thread holds registers for no more chunks
 * than it has, and per dtype: when x, residual, weight, out and residual_out share one, every row
 * is 16-byte aligned and N and Nout are multiples of 8 (the engine's f32, a bf16 model's bf16), the
 * dtype is a compile-time constant and the loads are raw 16-byte pieces, converted only once all
 * are issued. Any other call reads the dtypes at run time (16-byte accesses where the rows allow,
 * element by element otherwise) and converts each chunk as it arrives.
 *
 * The sum is per thread in column order, then per warp by the butterfly of gpu_warp.h, then over
 * the group's warps in warp order: a fixed order, so repeated runs agree bit for bit. residual_out
 * is one f32 add rounded once, equal to the host's bit for bit; out differs from it only by the
 * order of the sum.
 *
 * Each element is read by the thread that writes it, before it writes it, so residual_out may alias
 * residual (the engine's in-place residual stream) and out may alias x, as on the host. */
#include <math.h>

#include "args.h"
#include "gpu.h"
#include "gpu_runtime.h"
#include "gpu_warp.h"
#include "sy_elem_gpu.cuh"
#include "sy_numeric.h"
extern "C" {
#include "sy_op_check.h"
}

#define NORM_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

enum {
    NORM_CHUNK = 8,         /* columns per chunk: 16 bytes of bf16 */
    NORM_MAX_CACHE = 4,     /* chunks a thread keeps in registers, at most */
    NORM_GROUP_STEP = 64,   /* threads per row come in multiples of this: whole warps at either width */
    NORM_MAX_GROUP = 512,   /* threads per row, at most */
    NORM_BLOCK = 128,       /* threads per block when rows of a narrower group share one */
    NORM_PACK_ROWS = 4096,  /* from this many rows on, NORM_PACKED_CHUNKS chunks a thread; fewer rows get one */
    NORM_PACKED_CHUNKS = 3  /* bf16: 96 bytes of x and residual in flight a thread, in 64 registers */
};

/* The kernel's dtype parameter when the dtypes and the access width are read from the arguments. */
enum { NORM_ANY_DTYPE = SY_DTYPE_INVALID };

typedef struct norm_gpu_args {
    const void *x, *residual, *weight;
    void *out, *residual_out;
    int64_t x_stride, residual_stride, out_stride, residual_out_stride; /* elements; 0 for a single row */
    int32_t x_dtype, residual_dtype, weight_dtype, out_dtype, residual_out_dtype;
    int32_t vector; /* 1: 16-byte chunks (see the file's comment) */
    int64_t rows;
    uint32_t cols, cols_out;
    uint32_t group, rows_per_block; /* threads per row; rows per block */
    float eps;
} norm_gpu_args;

/* A tensor's dtype in the kernel: the instantiation's when it fixes one, else the argument's. */
template <int DT>
static __device__ __forceinline__ int32_t norm_dtype(int32_t given)
{
    return DT == NORM_ANY_DTYPE ? given : DT;
}

/* Byte offset of column n in a row of dtype; 64-bit, since 4 n can pass 2^32. */
static __device__ __forceinline__ uint64_t norm_offset(int32_t dtype, uint32_t n)
{
    return (uint64_t)n * (dtype == SY_DTYPE_BF16 ? 2u : 4u);
}

static __device__ __forceinline__ const char *norm_row(const void *base, int64_t row, int64_t stride, int32_t dtype)
{
    return (const char *)base + row * stride * (dtype == SY_DTYPE_BF16 ? 2 : 4);
}

/* One row of every tensor, with the dtypes and the access width the kernel uses for them. */
typedef struct norm_row_view {
    const char *x, *residual, *weight; /* residual NULL without one */
    char *out, *residual_out;          /* residual_out NULL when not written */
    int32_t x_dtype, residual_dtype, weight_dtype, out_dtype, residual_out_dtype;
    int vector;
    uint32_t cols, cols_out;
} norm_row_view;

template <int DT>
static __device__ __forceinline__ norm_row_view norm_view(const norm_gpu_args &a, int64_t row)
{
    norm_row_view v;
    v.x_dtype = norm_dtype<DT>(a.x_dtype);
    v.residual_dtype = norm_dtype<DT>(a.residual_dtype);
    v.weight_dtype = norm_dtype<DT>(a.weight_dtype);
    v.out_dtype = norm_dtype<DT>(a.out_dtype);
    v.residual_out_dtype = norm_dtype<DT>(a.residual_out_dtype);
    v.vector = DT != NORM_ANY_DTYPE || a.vector;
    v.x = norm_row(a.x, row, a.x_stride, v.x_dtype);
    v.residual = a.residual ? norm_row(a.residual, row, a.residual_stride, v.residual_dtype) : NULL;
    v.weight = (const char *)a.weight;
    v.out = (char *)norm_row(a.out, row, a.out_stride, v.out_dtype);
    v.residual_out = a.residual_out
                         ? (char *)norm_row(a.residual_out, row, a.residual_out_stride, v.residual_out_dtype)
                         : NULL;
    v.cols = a.cols;
    v.cols_out = a.cols_out;
    return v;
}

/* Columns n0 .. n0 + 7 of a row into v (zeros past `cols`). */
static __device__ __forceinline__ void norm_load8(const char *row, int32_t dtype, uint32_t n0, uint32_t cols,
                                                  int vector, float v[NORM_CHUNK])
{
    const char *p = row + norm_offset(dtype, n0);
    if (vector && dtype == SY_DTYPE_BF16) {
        sy_unpack<SY_DTYPE_BF16>(*(const uint4 *)p, v);
    } else if (vector) {
        sy_unpack<SY_DTYPE_F32>(*(const uint4 *)p, v);
        sy_unpack<SY_DTYPE_F32>(*(const uint4 *)(p + 16), v + 4);
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
    char *p = row + norm_offset(dtype, n0);
    if (vector && dtype == SY_DTYPE_BF16) {
        *(uint4 *)p = sy_pack<SY_DTYPE_BF16>(v, 1.0f);
    } else if (vector) {
        *(uint4 *)p = sy_pack<SY_DTYPE_F32>(v, 1.0f);
        *(uint4 *)(p + 16) = sy_pack<SY_DTYPE_F32>(v + 4, 1.0f);
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

/* A chunk of one tensor between its load and its use: with the dtype fixed at compile time the raw
 * 16 or 32 bytes, converted when used; with the dtype read at run time the f32 values. */
template <int DT>
struct norm_loaded_chunk {
    uint4 raw[DT == SY_DTYPE_F32 ? 2 : 1];
};
template <>
struct norm_loaded_chunk<NORM_ANY_DTYPE> {
    float v[NORM_CHUNK];
};

/* x and residual of a chunk between their loads and the sum: with the dtype fixed the raw bytes, so
 * that none of a thread's loads waits for another's data; with the dtypes read at run time, s
 * itself, added as the loads arrive. */
template <int DT>
struct norm_input_chunk {
    norm_loaded_chunk<DT> x, residual;
};
template <>
struct norm_input_chunk<NORM_ANY_DTYPE> {
    float s[NORM_CHUNK];
};

/* The raw pieces of a chunk of a fixed dtype, from p. */
template <int DT>
static __device__ __forceinline__ void norm_load_raw(norm_loaded_chunk<DT> &chunk, const char *p)
{
#pragma unroll
    for (int k = 0; k < (int)(sizeof chunk.raw / sizeof chunk.raw[0]); k++)
        chunk.raw[k] = ((const uint4 *)p)[k];
}

/* A loaded chunk's values as f32. */
template <int DT>
static __device__ __forceinline__ void norm_widen(const norm_loaded_chunk<DT> &chunk, float v[NORM_CHUNK])
{
    if constexpr (DT == NORM_ANY_DTYPE) {
#pragma unroll
        for (int q = 0; q < NORM_CHUNK; q++)
            v[q] = chunk.v[q];
    } else {
        constexpr int per_piece = sy_elems16<DT>;
#pragma unroll
        for (int k = 0; k < NORM_CHUNK / per_piece; k++)
            sy_unpack<DT>(chunk.raw[k], v + k * per_piece);
    }
}

/* Loads of the chunk at column n0: x and residual, or the weight. */
template <int DT>
static __device__ __forceinline__ void norm_fetch_inputs(norm_input_chunk<DT> &in, const norm_row_view &v, uint32_t n0)
{
    if constexpr (DT == NORM_ANY_DTYPE) {
        norm_load8(v.x, v.x_dtype, n0, v.cols, v.vector, in.s);
        if (v.residual) {
            float r[NORM_CHUNK];
            norm_load8(v.residual, v.residual_dtype, n0, v.cols, v.vector, r);
#pragma unroll
            for (int q = 0; q < NORM_CHUNK; q++)
                in.s[q] += r[q];
        }
    } else {
        norm_load_raw(in.x, v.x + norm_offset(DT, n0));
        if (v.residual)
            norm_load_raw(in.residual, v.residual + norm_offset(DT, n0));
    }
}

template <int DT>
static __device__ __forceinline__ void norm_fetch_weight(norm_loaded_chunk<DT> &w, const norm_row_view &v, uint32_t n0)
{
    if constexpr (DT == NORM_ANY_DTYPE)
        norm_load8(v.weight, v.weight_dtype, n0, v.cols, v.vector, w.v);
    else
        norm_load_raw(w, v.weight + norm_offset(DT, n0));
}

/* s = x (+ residual) of a fetched chunk. */
template <int DT>
static __device__ __forceinline__ void norm_inputs_sum(const norm_input_chunk<DT> &in, const norm_row_view &v,
                                                       float s[NORM_CHUNK])
{
    if constexpr (DT == NORM_ANY_DTYPE) {
#pragma unroll
        for (int q = 0; q < NORM_CHUNK; q++)
            s[q] = in.s[q];
    } else {
        norm_widen(in.x, s);
        if (v.residual) {
            float r[NORM_CHUNK];
            norm_widen(in.residual, r);
#pragma unroll
            for (int q = 0; q < NORM_CHUNK; q++)
                s[q] += r[q];
        }
    }
}

/* out of the chunk at column n0, whose s and w are known; columns past N within it get zeros. */
static __device__ __forceinline__ void norm_store_out(const norm_row_view &v, uint32_t n0, const float s[NORM_CHUNK],
                                                      const float w[NORM_CHUNK], float r)
{
    float y[NORM_CHUNK];
#pragma unroll
    for (int q = 0; q < NORM_CHUNK; q++)
        y[q] = v.vector || n0 + (uint32_t)q < v.cols ? s[q] * r * w[q] : 0.0f;
    norm_store8(v.out, v.out_dtype, n0, v.cols_out, v.vector, y);
}

/* A chunk of out's zero padding, past the real columns (a partial last chunk gets its zeros from
 * norm_store_out). */
static __device__ __forceinline__ void norm_store_zeros(const norm_row_view &v, uint32_t n0)
{
    const float zeros[NORM_CHUNK] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    norm_store8(v.out, v.out_dtype, n0, v.cols_out, v.vector, zeros);
}

static __device__ __forceinline__ void norm_store_residual(const norm_row_view &v, uint32_t n0,
                                                           const float s[NORM_CHUNK])
{
    if (v.residual_out)
        norm_store8(v.residual_out, v.residual_out_dtype, n0, v.cols, v.vector, s);
}

/* Sum over the thread's group (`group` threads, whole warps, consecutive, the first being
 * threadIdx.x - lane); every thread of the block must call it. */
static __device__ __forceinline__ float norm_group_sum(float value, uint32_t lane, uint32_t group, float *warp_sums)
{
    value = sy_warp_sum(value);
    if (threadIdx.x % SY_WARP_SIZE == 0)
        warp_sums[threadIdx.x / SY_WARP_SIZE] = value;
    __syncthreads();
    const uint32_t first = (threadIdx.x - lane) / SY_WARP_SIZE, warps = group / SY_WARP_SIZE;
    float total = 0.0f;
    for (uint32_t i = 0; i < warps; i++)
        total += warp_sums[first + i];
    return total;
}

template <int CACHED_CHUNKS, int DT>
static __global__ void __launch_bounds__(NORM_MAX_GROUP) norm_gpu_kernel(norm_gpu_args a)
{
    __shared__ float warp_sums[SY_MAX_WARPS_PER_BLOCK];
    sy_gpu_wait_for_previous_kernel();
    const uint32_t group = a.group;
    /* The block's row this thread works on; no division when a block is one row. */
    const uint32_t slot = a.rows_per_block > 1 ? threadIdx.x / group : 0u;
    const uint32_t lane = threadIdx.x - slot * group;
    const int64_t m = (int64_t)blockIdx.x * a.rows_per_block + slot;
    /* Threads past the last row load and store nothing but take part in the barrier of the sum. */
    const bool live = m < a.rows;
    const norm_row_view v = norm_view<DT>(a, live ? m : 0);
    const uint32_t chunks = (a.cols + NORM_CHUNK - 1) / NORM_CHUNK;
    const uint32_t chunks_out = (a.cols_out + NORM_CHUNK - 1) / NORM_CHUNK;

    /* Every load of the cached chunks first, so that they are in flight together; the weight's
     * too, so that its latency (an L1 or L2 hit) hides behind theirs instead of following the sum. */
    bool real[CACHED_CHUNKS]; /* the chunk holds columns < N of a live row */
    /* Zeroed: only real chunks are loaded and read, but the compilers cannot tell. */
    norm_input_chunk<DT> in[CACHED_CHUNKS] = {};
    norm_loaded_chunk<DT> w_in[CACHED_CHUNKS] = {};
#pragma unroll
    for (int i = 0; i < CACHED_CHUNKS; i++) {
        const uint32_t c = lane + (uint32_t)i * group;
        real[i] = live && c < chunks;
        if (real[i]) {
            norm_fetch_inputs(in[i], v, c * NORM_CHUNK);
            norm_fetch_weight(w_in[i], v, c * NORM_CHUNK);
        }
    }
    /* s of the cached chunks and the sum of its squares; residual_out needs no sum, so its stores
     * leave now, while the group reduces. */
    float cache[CACHED_CHUNKS][NORM_CHUNK];
    float squares = 0.0f;
#pragma unroll
    for (int i = 0; i < CACHED_CHUNKS; i++) {
        if (real[i]) {
            norm_inputs_sum(in[i], v, cache[i]);
#pragma unroll
            for (int q = 0; q < NORM_CHUNK; q++)
                squares += cache[i][q] * cache[i][q];
            norm_store_residual(v, (lane + (uint32_t)i * group) * NORM_CHUNK, cache[i]);
        }
    }
    /* Rows wider than the cache (only the widest instantiation has them): the rest of the row's
     * chunks, summed now and read again for the output. Their residual_out waits for that second
     * read, which it may overwrite. */
    const uint32_t first_uncached = lane + CACHED_CHUNKS * group;
    if (CACHED_CHUNKS == NORM_MAX_CACHE) {
        for (uint32_t c = first_uncached; live && c < chunks; c += group) {
            norm_input_chunk<DT> rest = {};
            float s[NORM_CHUNK];
            norm_fetch_inputs(rest, v, c * NORM_CHUNK);
            norm_inputs_sum(rest, v, s);
#pragma unroll
            for (int q = 0; q < NORM_CHUNK; q++)
                squares += s[q] * s[q];
        }
    }
    const float total = norm_group_sum(squares, lane, group, warp_sums);
    if (!live)
        return;
    const float r = 1.0f / sqrtf(total / (float)a.cols + a.eps);

    /* out of the cached chunks (compile-time indices keep them in registers), or the zero padding
     * where a chunk lies past the real columns. */
#pragma unroll
    for (int i = 0; i < CACHED_CHUNKS; i++) {
        const uint32_t c = lane + (uint32_t)i * group;
        if (real[i]) {
            float w[NORM_CHUNK];
            norm_widen(w_in[i], w);
            norm_store_out(v, c * NORM_CHUNK, cache[i], w, r);
        } else if (c < chunks_out) {
            norm_store_zeros(v, c * NORM_CHUNK);
        }
    }
    if (CACHED_CHUNKS == NORM_MAX_CACHE) {
        for (uint32_t c = first_uncached; c < chunks_out; c += group) {
            if (c >= chunks) {
                norm_store_zeros(v, c * NORM_CHUNK);
                continue;
            }
            norm_input_chunk<DT> rest = {};
            norm_loaded_chunk<DT> w_rest = {};
            float s[NORM_CHUNK], w[NORM_CHUNK];
            norm_fetch_inputs(rest, v, c * NORM_CHUNK);
            norm_fetch_weight(w_rest, v, c * NORM_CHUNK);
            norm_inputs_sum(rest, v, s);
            norm_widen(w_rest, w);
            norm_store_out(v, c * NORM_CHUNK, s, w, r);
            norm_store_residual(v, c * NORM_CHUNK, s);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* host side                                                                                   */

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

/* The dtype every tensor of the call has (absent residuals aside), or NORM_ANY_DTYPE. */
static int32_t norm_common_dtype(const sy_norm_args *in)
{
    const int32_t dtype = in->x.dtype;
    const sy_tensor *others[] = {&in->weight, &in->out, &in->residual, &in->residual_out};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (others[i]->data && others[i]->dtype != dtype)
            return NORM_ANY_DTYPE;
    return dtype;
}

/* The kernel for a number of cached chunks (1 .. NORM_MAX_CACHE) and a dtype parameter. */
template <int DT>
static void norm_launch(const norm_gpu_args &a, uint32_t cached, dim3 grid, dim3 block, gpuStream_t stream)
{
    if (cached <= 1)
        SY_GPU_LAUNCH_CHAINED(grid, block, 0, stream, norm_gpu_kernel<1, DT>)(a);
    else if (cached == 2)
        SY_GPU_LAUNCH_CHAINED(grid, block, 0, stream, norm_gpu_kernel<2, DT>)(a);
    else if (cached == 3)
        SY_GPU_LAUNCH_CHAINED(grid, block, 0, stream, norm_gpu_kernel<3, DT>)(a);
    else
        SY_GPU_LAUNCH_CHAINED(grid, block, 0, stream, norm_gpu_kernel<NORM_MAX_CACHE, DT>)(a);
}

extern "C" sy_status sy_norm_rmsnorm_gpu(void *ctx, sy_stream stream, const sy_norm_args *in, sy_error *err)
{
    (void)ctx;
    int64_t nout = 0;
    /* The kernel indexes a row's columns in 32 bits, two to an element pair. */
    sy_status st = sy_norm_rmsnorm_check_args(in, NORM_DTYPES, UINT32_MAX / 2, &nout, err);
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

    /* Threads per row: the output row's chunks over the chunks a thread should take, rounded up to
     * whole groups of NORM_GROUP_STEP, at most NORM_MAX_GROUP (wider rows loop). */
    const int64_t chunks_out = (nout + NORM_CHUNK - 1) / NORM_CHUNK;
    const int64_t chunks_a_thread = M >= NORM_PACK_ROWS ? NORM_PACKED_CHUNKS : 1;
    int64_t group = (chunks_out + chunks_a_thread - 1) / chunks_a_thread;
    group = (group + NORM_GROUP_STEP - 1) / NORM_GROUP_STEP * NORM_GROUP_STEP;
    if (group > NORM_MAX_GROUP)
        group = NORM_MAX_GROUP;
    a.group = (uint32_t)group;
    a.rows_per_block = M >= NORM_PACK_ROWS && group < NORM_BLOCK ? NORM_BLOCK / (uint32_t)group : 1;
    const int64_t blocks = (M + a.rows_per_block - 1) / a.rows_per_block;
    if (blocks > 0x7FFFFFFF)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "norm rmsnorm: %lld rows exceed one launch", (long long)M);
    const int64_t per_thread = (chunks_out + group - 1) / group;
    const uint32_t cached = (uint32_t)(per_thread < NORM_MAX_CACHE ? per_thread : (int64_t)NORM_MAX_CACHE);
    const dim3 grid((unsigned)blocks), block(a.group * a.rows_per_block);
    const gpuStream_t s = sy_gpu_stream(stream);
    const int32_t dtype = a.vector ? norm_common_dtype(in) : NORM_ANY_DTYPE;
    if (dtype == SY_DTYPE_BF16)
        norm_launch<SY_DTYPE_BF16>(a, cached, grid, block, s);
    else if (dtype == SY_DTYPE_F32)
        norm_launch<SY_DTYPE_F32>(a, cached, grid, block, s);
    else
        norm_launch<NORM_ANY_DTYPE>(a, cached, grid, block, s);
    SY_GPU_CHECK_LAUNCH(err, "norm_gpu_kernel");
    return SY_OK;
}

SY_GPU_HOST_TABLE(extern "C" const sy_norm_ops sy_norm_rmsnorm_gpu_ops = {sizeof(sy_norm_ops), 0, sy_norm_rmsnorm_gpu});
