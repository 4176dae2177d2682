/* The fixture's op on a GPU: one warp per output element, lanes striding over K and meeting in a
 * warp-width-agnostic butterfly sum, so the same source is right at 32 (NVIDIA) and 64 (CDNA). */
#include "gpu_linear_fixture.h"
#include "gpu_runtime.h"
#include "gpu_warp.h"

#define FIXTURE_BLOCK_THREADS 256 /* a multiple of both warp widths */

/* static: the module exports nothing but its entry point. */
static __global__ void gpu_linear_fixture_kernel(const float *x, int64_t x_row_stride, const float *w,
                                             const float *b, float *y, int64_t y_row_stride, int64_t m_rows,
                                             int64_t n_cols, int64_t k_cols)
{
    const int lane = (int)threadIdx.x % SY_WARP_SIZE;
    const int64_t output = (int64_t)blockIdx.x * (FIXTURE_BLOCK_THREADS / SY_WARP_SIZE) +
                           (int64_t)threadIdx.x / SY_WARP_SIZE;
    if (output >= m_rows * n_cols)
        return; /* whole warps leave together: the shuffles below see every lane */
    const int64_t m = output / n_cols, n = output % n_cols;
    float acc = 0.0f;
    for (int64_t k = lane; k < k_cols; k += SY_WARP_SIZE)
        acc += x[m * x_row_stride + k] * w[n * k_cols + k];
    acc = sy_warp_sum(acc);
    if (lane == 0)
        y[m * y_row_stride + n] = acc + (b ? b[n] : 0.0f);
}

extern "C" sy_status gpu_linear_fixture_run(void *ctx, sy_stream stream, const sy_linear_args *a, sy_error *err)
{
    (void)ctx;
    sy_status st = gpu_linear_fixture_check(a, err);
    if (st != SY_OK)
        return st;
    const int64_t m_rows = a->x.shape[0], k_cols = a->x.shape[1], n_cols = a->w.shape[0];
    const int64_t outputs = m_rows * n_cols;
    if (outputs == 0)
        return SY_OK;
    const int64_t warps_per_block = FIXTURE_BLOCK_THREADS / SY_WARP_SIZE;
    const int64_t blocks = (outputs + warps_per_block - 1) / warps_per_block;
    if (blocks > 0x7FFFFFFF) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "gpu_linear_fixture (%s): %lld outputs need more than 2^31-1 blocks",
                     SY_PLUGIN_BACKEND_NAME, (long long)outputs);
        return SY_E_UNSUPPORTED;
    }
    gpu_linear_fixture_kernel<<<(unsigned)blocks, FIXTURE_BLOCK_THREADS, 0, sy_gpu_stream(stream)>>>(
        (const float *)a->x.data, a->x.stride[0], (const float *)a->w.data, (const float *)a->b.data,
        (float *)a->y.data, a->y.stride[0], m_rows, n_cols, k_cols);
    SY_GPU_CHECK_LAUNCH(err, "gpu_linear_fixture_kernel");
    return SY_OK;
}
