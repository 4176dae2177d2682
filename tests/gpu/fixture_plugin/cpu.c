/* The fixture's op on the host, accumulated in f32 like the GPU one. */
#include "gpu_linear_fixture.h"

sy_status gpu_linear_fixture_run(void *ctx, sy_stream stream, const sy_linear_args *a, sy_error *err)
{
    (void)ctx;
    (void)stream;
    sy_status st = gpu_linear_fixture_check(a, err);
    if (st != SY_OK)
        return st;
    const float *x = a->x.data, *w = a->w.data, *b = a->b.data;
    float *y = a->y.data;
    const int64_t m_rows = a->x.shape[0], k_cols = a->x.shape[1], n_cols = a->w.shape[0];
    for (int64_t m = 0; m < m_rows; m++)
        for (int64_t n = 0; n < n_cols; n++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < k_cols; k++)
                acc += x[m * a->x.stride[0] + k] * w[n * k_cols + k];
            y[m * a->y.stride[0] + n] = acc + (b ? b[n] : 0.0f);
        }
    return SY_OK;
}
