/* y = x W^T + b on the GPU with f32 accumulation, f32 or bf16 weights and activations (the host
 * version's contract, cpu.c).
 *
 * cuda: cuBLAS, cublasGemmEx with CUBLAS_COMPUTE_32F (f32 accumulation; no TF32: the math mode
 * stays the default), into an f32 scratch C, then one small kernel adds the bias and rounds into y;
 * an f32 y without bias, from x taken as it is or widened, is the GEMM's own output.
 * The operands reach the GEMM as:
 *   x and W of one dtype    as they are (bf16 x bf16 on the tensor cores, f32 x f32 on the CUDA cores)
 *   x bf16, W f32           x widened to f32 (exact), an f32 GEMM
 *   x f32, W bf16           x split into bf16 high and low parts, hi = bf16(x), lo = bf16(x - hi),
 *                           stacked as 2M rows of one bf16 GEMM; y = C[hi rows] + C[lo rows].
 * The split keeps an f32 activation to about 2^-17 of itself (rounding x to bf16 alone would cost
 * 2^-9, a relative error near 1e-3 in y, most of a bf16 tolerance) while the weights, the large
 * operand, are still read once, as bf16, by tensor cores; the price is twice the MMA work, which
 * matters only where the call is compute-bound (long prefills).
 *
 * hip: the ROCm that builds here (Debian's HIP 5.2) has neither hipBLAS nor rocBLAS, so the hip
 * library runs the portable tiled kernel below, written in the shim dialect: 64 x 64 outputs a
 * block, K in steps of 16 through shared memory, 4 x 4 outputs a thread, every operand widened to
 * f32, each output summed in K order. It is correct, not fast (no MFMA). On cuda the same kernel is
 * the plugin "linear_tiled" (rank -1000, never chosen by `auto`), so that the conformance suite
 * checks on a real GPU the code the hip library runs.
 *
 * y given as column parts (ABI 1.4) costs nothing extra: the epilogue (or the tiled kernel) stores each
 * column into the part that holds it, so q, k and v in arrays of their own still take one GEMM.
 *
 * Every kernel and cuBLAS call is enqueued on the caller's stream; scratch comes from the host
 * API's workspace (cuBLAS included, through cublasSetWorkspace; cublasCreate itself keeps a small
 * allocation of its own for the handle, the one exception). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "gpu.h"
#include "gpu_runtime.h"
#include "sy_elem_gpu.cuh"
#include "sy_numeric.h"
#include "workspace_gpu.cuh"
extern "C" {
#include "sy_op_check.h"
}

#if defined(SY_VENDOR_CUDA)
/* The BLAS side of the shim: the only file that names cuBLAS. */
#include <cublas_v2.h>
#endif


enum {
    LINEAR_TILE_M = 64,
    LINEAR_TILE_N = 64,
    LINEAR_TILE_K = 16,
    LINEAR_THREADS = 256, /* 16 x 16 threads, 4 x 4 outputs each */
    LINEAR_SIMPLE_THREADS = 256,
    LINEAR_BLAS_WORKSPACE = 32 << 20 /* cuBLAS's recommendation for Hopper */
};
/* f32 scratch of one pass of the cuBLAS path (C and converted x); more rows take several passes. */
#define LINEAR_SCRATCH_CAP ((size_t)256 << 20)

typedef struct linear_gpu {
    sy_gpu_workspace scratch;
#if defined(SY_VENDOR_CUDA)
    cublasHandle_t blas;
    sy_gpu_workspace blas_workspace;
#endif
} linear_gpu;

extern "C" sy_status sy_linear_gpu_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    linear_gpu *c = (linear_gpu *)calloc(1, sizeof *c);
    if (!c)
        return sy_op_fail(err, SY_E_NOMEM, "linear init: out of memory for the plugin context");
    c->scratch.host = host;
#if defined(SY_VENDOR_CUDA)
    c->blas_workspace.host = host;
#endif
    *ctx = c;
    return SY_OK;
}

extern "C" void sy_linear_gpu_fini(void *ctx)
{
    linear_gpu *c = (linear_gpu *)ctx;
    if (!c)
        return;
#if defined(SY_VENDOR_CUDA)
    if (c->blas)
        cublasDestroy(c->blas);
    sy_gpu_workspace_release(&c->blas_workspace);
#endif
    sy_gpu_workspace_release(&c->scratch);
    free(c);
}

static __device__ __forceinline__ float linear_load(const void *p, int32_t dtype, int64_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static __device__ __forceinline__ void linear_store(void *p, int32_t dtype, int64_t i, float v)
{
    if (dtype == SY_DTYPE_BF16)
        ((uint16_t *)p)[i] = sy_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* The outputs: y, or the caller's column parts (ABI 1.4), part i holding columns [first[i], first[i + 1]). */
typedef struct linear_out_parts {
    void *data[SY_LINEAR_MAX_Y_PARTS];
    int64_t ld[SY_LINEAR_MAX_Y_PARTS];
    int32_t dtype[SY_LINEAR_MAX_Y_PARTS];
    int64_t first[SY_LINEAR_MAX_Y_PARTS + 1];
    int32_t n;
} linear_out_parts;

/* The strides of the call, with a single row's stride (free in the view) replaced by its length. */
typedef struct linear_gemm_args {
    const void *x, *w, *b;
    linear_out_parts out;
    int64_t ldx, M, N, K;
    int32_t x_dtype, w_dtype, b_dtype;
} linear_gemm_args;

static linear_gemm_args linear_args_of(const sy_linear_args *a)
{
    linear_gemm_args g;
    g.x = a->x.data;
    g.w = a->w.data;
    g.b = a->b.data;
    g.M = a->x.shape[0];
    g.K = a->x.shape[1];
    g.N = a->w.shape[0];
    g.ldx = g.M == 1 ? g.K : a->x.stride[0];
    g.x_dtype = a->x.dtype;
    g.w_dtype = a->w.dtype;
    g.b_dtype = a->b.data ? a->b.dtype : SY_DTYPE_F32;
    sy_linear_out out;
    sy_linear_out_of(a, &out);
    g.out.n = (int32_t)out.n;
    for (uint32_t i = 0; i <= out.n; i++)
        g.out.first[i] = out.first[i];
    for (uint32_t i = 0; i < out.n; i++) {
        g.out.data[i] = out.part[i]->data;
        g.out.ld[i] = g.M == 1 ? out.part[i]->shape[1] : out.part[i]->stride[0];
        g.out.dtype[i] = out.part[i]->dtype;
    }
    return g;
}

/* Output row m, column n, into the part that holds the column. */
static __device__ __forceinline__ void linear_store_out(const linear_out_parts &o, int64_t m, int64_t n, float v)
{
    int p = 0;
    while (p + 1 < o.n && n >= o.first[p + 1])
        p++;
    linear_store(o.data[p], o.dtype[p], m * o.ld[p] + n - o.first[p], v);
}

/* ------------------------------------------------------------------------------------------ */
/* the portable tiled kernel (hip, and "linear_tiled" on cuda)                                 */

static __global__ void __launch_bounds__(LINEAR_THREADS) linear_tiled_kernel(linear_gemm_args a)
{
    /* [k][m] and [k][n]: a thread's 4 x values are 16 apart in m, its 4 w values 16 apart in n;
     * the extra column spreads the transposing stores over the banks. */
    __shared__ float xs[LINEAR_TILE_K][LINEAR_TILE_M + 1];
    __shared__ float ws[LINEAR_TILE_K][LINEAR_TILE_N + 1];
    const int tid = (int)threadIdx.x, tn = tid % 16, tm = tid / 16;
    const int64_t m0 = (int64_t)blockIdx.y * LINEAR_TILE_M, n0 = (int64_t)blockIdx.x * LINEAR_TILE_N;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    for (int64_t k0 = 0; k0 < a.K; k0 += LINEAR_TILE_K) {
#pragma unroll
        for (int i = 0; i < LINEAR_TILE_M * LINEAR_TILE_K / LINEAR_THREADS; i++) {
            const int idx = tid + i * LINEAR_THREADS, r = idx / LINEAR_TILE_K, kk = idx % LINEAR_TILE_K;
            const int64_t k = k0 + kk, m = m0 + r, n = n0 + r;
            xs[kk][r] = m < a.M && k < a.K ? linear_load(a.x, a.x_dtype, m * a.ldx + k) : 0.0f;
            ws[kk][r] = n < a.N && k < a.K ? linear_load(a.w, a.w_dtype, n * a.K + k) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < LINEAR_TILE_K; kk++) {
            float xv[4], wv[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                xv[i] = xs[kk][tm + 16 * i];
                wv[i] = ws[kk][tn + 16 * i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(xv[i], wv[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int64_t m = m0 + tm + 16 * i, n = n0 + tn + 16 * j;
            if (m < a.M && n < a.N)
                linear_store_out(a.out, m, n, acc[i][j] + (a.b ? linear_load(a.b, a.b_dtype, n) : 0.0f));
        }
}

extern "C" sy_status sy_linear_gpu_tiled(void *ctx, sy_stream stream, const sy_linear_args *args, sy_error *err)
{
    (void)ctx;
    sy_status st = sy_linear_check_args(args, err);
    if (st != SY_OK)
        return st;
    const linear_gemm_args a = linear_args_of(args);
    if (a.M == 0 || a.N == 0)
        return SY_OK;
    const int64_t grid_n = (a.N + LINEAR_TILE_N - 1) / LINEAR_TILE_N, grid_m = (a.M + LINEAR_TILE_M - 1) / LINEAR_TILE_M;
    if (grid_m > 65535)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "linear: M %lld exceeds the tiled kernel's %d rows",
                          (long long)a.M, 65535 * LINEAR_TILE_M);
    SY_GPU_LAUNCH(dim3((unsigned)grid_n, (unsigned)grid_m), LINEAR_THREADS, 0, sy_gpu_stream(stream), linear_tiled_kernel)(a);
    SY_GPU_CHECK_LAUNCH(err, "linear_tiled_kernel");
    return SY_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* cuBLAS (cuda)                                                                               */

#if defined(SY_VENDOR_CUDA)

/* The element-wise kernels around the GEMM give each thread LINEAR_RUN consecutive columns of one
 * row (one 16-byte load of f32 where the row allows it): columns across blockIdx.x, rows across
 * blockIdx.y, each grid-strided past its launch limit. With one element a thread, found from a flat
 * index by a 64-bit division, the split took 4.2 us for a 128 x 2880 x and the epilogue 123 us for
 * the 128 x 201088 logits (H200): more threads than the data needed, each waiting on one load. */
enum { LINEAR_RUN = 4 };

static dim3 linear_grid_for(int64_t rows, int64_t cols)
{
    const int64_t per_block = (int64_t)LINEAR_SIMPLE_THREADS * LINEAR_RUN, x = (cols + per_block - 1) / per_block;
    return dim3((unsigned)(x < 1 ? 1 : x > 65536 ? 65536 : x), (unsigned)(rows < 1 ? 1 : rows > 65535 ? 65535 : rows));
}

/* Row m and first column k0 of each run of a [rows x cols] matrix this thread owns under linear_grid_for. */
#define LINEAR_FOR_EACH_RUN(m, k0, rows, cols)                                                      \
    for (int64_t m = blockIdx.y; m < (rows); m += gridDim.y)                                        \
        for (int64_t k0 = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * LINEAR_RUN; k0 < (cols); \
             k0 += (int64_t)gridDim.x * blockDim.x * LINEAR_RUN)

/* The run of f32 at row[k0 ..], as far as it goes before n: one 16-byte load when whole and aligned. */
static __device__ __forceinline__ void linear_load_run(const float *row, int64_t k0, int64_t n, float (&v)[LINEAR_RUN])
{
    const float *p = row + k0;
    if (k0 + LINEAR_RUN <= n && ((uintptr_t)p & 15u) == 0) {
        const float4 q = *(const float4 *)p;
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
        return;
    }
#pragma unroll
    for (int j = 0; j < LINEAR_RUN; j++)
        v[j] = k0 + j < n ? p[j] : 0.0f;
}

/* x rows [0, rows) as bf16 high parts in out[0 .. rows) and low parts in out[rows .. 2 rows). */
static __global__ void linear_split_kernel(const float *x, int64_t ldx, int64_t rows, int64_t K, uint16_t *out)
{
    sy_gpu_wait_for_previous_kernel();
    LINEAR_FOR_EACH_RUN(m, k0, rows, K)
    {
        float v[LINEAR_RUN];
        linear_load_run(x + m * ldx, k0, K, v);
#pragma unroll
        for (int j = 0; j < LINEAR_RUN; j++)
            if (k0 + j < K) {
                const uint16_t hi = sy_f32_to_bf16(v[j]);
                out[m * K + k0 + j] = hi;
                out[(rows + m) * K + k0 + j] = sy_f32_to_bf16(v[j] - sy_bf16_to_f32(hi));
            }
    }
}

static __global__ void linear_widen_kernel(const uint16_t *x, int64_t ldx, int64_t rows, int64_t K, float *out)
{
    sy_gpu_wait_for_previous_kernel();
    LINEAR_FOR_EACH_RUN(m, k0, rows, K)
    {
#pragma unroll
        for (int j = 0; j < LINEAR_RUN; j++)
            if (k0 + j < K)
                out[m * K + k0 + j] = sy_bf16_to_f32(x[m * ldx + k0 + j]);
    }
}

/* y[row0 + m][n] = C[m][n] (+ C[rows + m][n]) + b[n], rounded once to the dtype of the part holding n. */
static __global__ void linear_epilogue_kernel(const float *C, int64_t rows, int64_t N, int split, const void *b,
                                              int32_t b_dtype, linear_out_parts out, int64_t row0)
{
    sy_gpu_wait_for_previous_kernel();
    LINEAR_FOR_EACH_RUN(m, n0, rows, N)
    {
        float v[LINEAR_RUN], lo[LINEAR_RUN];
        linear_load_run(C + m * N, n0, N, v);
        if (split)
            linear_load_run(C + (rows + m) * N, n0, N, lo);
#pragma unroll
        for (int j = 0; j < LINEAR_RUN; j++) {
            if (n0 + j >= N)
                break;
            float r = v[j];
            if (split)
                r += lo[j];
            if (b)
                r += linear_load(b, b_dtype, n0 + j);
            linear_store_out(out, row0 + m, n0 + j, r);
        }
    }
}

static sy_status linear_blas_fail(sy_error *err, cublasStatus_t status, const char *call, const linear_gemm_args *a,
                                  const char *file, int line)
{
    return sy_op_fail(err, status == CUBLAS_STATUS_ALLOC_FAILED ? SY_E_NOMEM : SY_E_BACKEND,
                      "cuda: %s failed: %s (%s) for M %lld N %lld K %lld at %s:%d", call, cublasGetStatusName(status),
                      cublasGetStatusString(status), (long long)a->M, (long long)a->N, (long long)a->K, file, line);
}

#define LINEAR_BLAS_CHECK(err, call, name, a)                                       \
    do {                                                                            \
        cublasStatus_t linear_status_ = (call);                                     \
        if (linear_status_ != CUBLAS_STATUS_SUCCESS)                                \
            return linear_blas_fail((err), linear_status_, name, (a), __FILE__, __LINE__); \
    } while (0)

/* The handle on first use, with its workspace from the host API. */
static sy_status linear_blas_handle(linear_gpu *c, const linear_gemm_args *a, sy_error *err)
{
    if (c->blas)
        return SY_OK;
    void *ws = NULL;
    sy_status st = sy_gpu_workspace_reserve(&c->blas_workspace, "linear", LINEAR_BLAS_WORKSPACE, &ws, err);
    if (st != SY_OK)
        return st;
    cublasHandle_t h = NULL;
    LINEAR_BLAS_CHECK(err, cublasCreate(&h), "cublasCreate", a);
    cublasStatus_t s = cublasSetWorkspace(h, ws, LINEAR_BLAS_WORKSPACE);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(h);
        return linear_blas_fail(err, s, "cublasSetWorkspace / cublasSetMathMode", a, __FILE__, __LINE__);
    }
    c->blas = h;
    return SY_OK;
}

/* How the operands reach the GEMM (see the file's comment). */
typedef enum linear_operands { LINEAR_AS_GIVEN, LINEAR_WIDEN_X, LINEAR_SPLIT_X } linear_operands;

extern "C" sy_status sy_linear_gpu_blas(void *ctx, sy_stream stream, const sy_linear_args *args, sy_error *err)
{
    linear_gpu *c = (linear_gpu *)ctx;
    sy_status st = sy_linear_check_args(args, err);
    if (st != SY_OK)
        return st;
    if (!c)
        return sy_op_fail(err, SY_E_INVALID, "linear: ctx is NULL (init was not called)");
    const linear_gemm_args a = linear_args_of(args);
    if (a.M == 0 || a.N == 0)
        return SY_OK;
    const gpuStream_t gs = sy_gpu_stream(stream);
    st = linear_blas_handle(c, &a, err);
    if (st != SY_OK)
        return st;
    LINEAR_BLAS_CHECK(err, cublasSetStream(c->blas, gs), "cublasSetStream", &a);

    const linear_operands how = a.x_dtype == a.w_dtype     ? LINEAR_AS_GIVEN
                                : a.w_dtype == SY_DTYPE_F32 ? LINEAR_WIDEN_X
                                                            : LINEAR_SPLIT_X;
    const int split = how == LINEAR_SPLIT_X;
    /* An f32 y without bias or planes to sum is what the GEMM writes: no scratch C, no epilogue
     * (the unembedding of bf16 rows: 103 MB of logits at batch 128, whose epilogue alone took 99 us
     * on the H200). */
    const int direct = !split && !a.b && a.out.n == 1 && a.out.dtype[0] == SY_DTYPE_F32 && a.out.ld[0] <= INT32_MAX;
    const cudaDataType_t type = a.w_dtype == SY_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    /* Scratch bytes a row of x costs: its C rows, and its converted copy. */
    const size_t c_row_bytes = direct ? 0u : (size_t)(split ? 2 : 1) * (size_t)a.N * sizeof(float);
    const size_t x_row_bytes = how == LINEAR_WIDEN_X ? (size_t)a.K * sizeof(float)
                               : split              ? (size_t)a.K * 2u * sizeof(uint16_t)
                                                    : 0u;
    int64_t rows = c_row_bytes + x_row_bytes ? (int64_t)(LINEAR_SCRATCH_CAP / (c_row_bytes + x_row_bytes)) : a.M;
    rows = rows < 1 ? 1 : rows > a.M ? a.M : rows;
    if ((split ? 2 : 1) * rows > INT32_MAX)
        rows = INT32_MAX / 2;
    const size_t c_bytes = sy_gpu_workspace_align((size_t)rows * c_row_bytes);
    void *scratch = NULL;
    st = sy_gpu_workspace_reserve(&c->scratch, "linear", c_bytes + (size_t)rows * x_row_bytes, &scratch, err);
    if (st != SY_OK)
        return st;
    float *C = (float *)scratch;
    void *xb = (char *)scratch + c_bytes;
    const size_t x_elem = sy_dtype_size(a.x_dtype);
    const float one = 1.0f, zero = 0.0f;

    for (int64_t m0 = 0; m0 < a.M; m0 += rows) {
        const int64_t mp = a.M - m0 < rows ? a.M - m0 : rows;
        const void *x_pass = (const char *)a.x + m0 * a.ldx * (int64_t)x_elem;
        const void *B = x_pass;
        int64_t ldb = a.ldx;
        if (how == LINEAR_WIDEN_X) {
            SY_GPU_LAUNCH_CHAINED(linear_grid_for(mp, a.K), LINEAR_SIMPLE_THREADS, 0, gs, linear_widen_kernel)(
                (const uint16_t *)x_pass, a.ldx, mp, a.K, (float *)xb);
            SY_GPU_CHECK_LAUNCH(err, "linear_widen_kernel");
            B = xb;
            ldb = a.K;
        } else if (split) {
            SY_GPU_LAUNCH_CHAINED(linear_grid_for(mp, a.K), LINEAR_SIMPLE_THREADS, 0, gs, linear_split_kernel)(
                (const float *)x_pass, a.ldx, mp, a.K, (uint16_t *)xb);
            SY_GPU_CHECK_LAUNCH(err, "linear_split_kernel");
            B = xb;
            ldb = a.K;
        }
        float *y_pass = direct ? (float *)a.out.data[0] + m0 * a.out.ld[0] : NULL;
        /* Column-major view: C^T [N x rows] = W [K x N]^T * x^T [K x rows]. */
        LINEAR_BLAS_CHECK(err,
                          cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)a.N, (int)((split ? 2 : 1) * mp),
                                       (int)a.K, &one, a.w, type, (int)a.K, B, type, (int)ldb, &zero,
                                       direct ? y_pass : C, CUDA_R_32F, (int)(direct ? a.out.ld[0] : a.N),
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                          "cublasGemmEx", &a);
        if (direct)
            continue;
        SY_GPU_LAUNCH_CHAINED(linear_grid_for(mp, a.N), LINEAR_SIMPLE_THREADS, 0, gs, linear_epilogue_kernel)(
            C, mp, a.N, split, a.b, a.b_dtype, a.out, m0);
        SY_GPU_CHECK_LAUNCH(err, "linear_epilogue_kernel");
    }
    return SY_OK;
}

#endif

/* Host pass only: hipcc would otherwise emit these external const tables into the device code. */
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#if defined(SY_VENDOR_CUDA)
extern "C" const sy_linear_ops sy_linear_gpu_ops = {sizeof(sy_linear_ops), 0, sy_linear_gpu_blas};
#else
extern "C" const sy_linear_ops sy_linear_gpu_ops = {sizeof(sy_linear_ops), 0, sy_linear_gpu_tiled};
#endif
extern "C" const sy_linear_ops sy_linear_gpu_tiled_ops = {sizeof(sy_linear_ops), 0, sy_linear_gpu_tiled};
#endif
