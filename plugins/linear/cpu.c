/* y = x W^T + b on the host with f32 accumulation, through OpenBLAS.
 *
 * f32 x, W and y go to one sgemm (sgemv for a single row) with the caller's strides. Otherwise the
 * operands are made f32 first: x once per call, W in blocks of rows into a scratch tile of a few MB
 * (the weights arrive with every call and may be far larger than memory one would want to double,
 * e.g. the 201088-row unembedding), each block multiplied as soon as it is converted; a bf16 y is
 * computed in f32 and rounded once, after the bias. y given as column parts (ABI 1.4) is filled the
 * same way, each block's columns stored into the parts that hold them. */
#include "cpu.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_workspace.h"
#include "sy_numeric.h"
#include "args.h"
#include "sy_op_check.h"

/* f32 bytes of one converted block of W: L3-resident, and wide enough (364 rows at K = 2880) that
 * each sgemm call keeps OpenBLAS efficient; half a megabyte (45 rows) measured 2x slower at M = 128
 * and no faster for a single row. */
enum { W_BLOCK_BYTES = 4 << 20, W_BLOCK_MIN_ROWS = 64 };

typedef struct linear_cpu {
    sy_cpu_workspace ws;
} linear_cpu;

sy_status sy_linear_cpu_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    linear_cpu *c = calloc(1, sizeof *c);
    if (!c)
        return sy_op_fail(err, SY_E_NOMEM, "linear init: out of memory for the plugin context");
    c->ws.host = host;
    *ctx = c;
    return SY_OK;
}

void sy_linear_cpu_fini(void *ctx)
{
    linear_cpu *c = ctx;
    if (!c)
        return;
    sy_cpu_workspace_release(&c->ws);
    free(c);
}

static float load(const void *p, int32_t dtype, size_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* rows x cols of a bf16 matrix (row stride ld) into a dense f32 one. */
static void bf16_rows_to_f32(const uint16_t *src, size_t ld, size_t rows, size_t cols, float *dst)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[r * cols + c] = sy_bf16_to_f32(src[r * ld + c]);
}

/* Columns [n0, n0 + nb) of output row m, from f32 v, into whichever parts of y hold them. */
static void store_row(const sy_linear_out *o, size_t m, size_t n0, const float *v, size_t nb)
{
    for (uint32_t p = 0; p < o->n; p++) {
        const size_t lo = (size_t)o->first[p] > n0 ? (size_t)o->first[p] : n0;
        const size_t hi = (size_t)o->first[p + 1] < n0 + nb ? (size_t)o->first[p + 1] : n0 + nb;
        const sy_tensor *t = o->part[p];
        const size_t at = (m ? m * (size_t)t->stride[0] : 0) + (lo - (size_t)o->first[p]);
        for (size_t n = lo; n < hi; n++) {
            if (t->dtype == SY_DTYPE_BF16)
                ((uint16_t *)t->data)[at + n - lo] = sy_f32_to_bf16(v[n - n0]);
            else
                ((float *)t->data)[at + n - lo] = v[n - n0];
        }
    }
}

/* y[:, n0 .. n0+nb) (f32, row stride ldy) += b[n0 ..]; then, unless it is y itself, stored into y. */
static void finish_block(const sy_linear_args *a, const sy_linear_out *o, int in_place, float *yf, size_t ldy,
                         size_t M, size_t n0, size_t nb)
{
    for (size_t m = 0; m < M; m++) {
        float *row = yf + m * ldy;
        if (a->b.data)
            for (size_t n = 0; n < nb; n++)
                row[n] += load(a->b.data, a->b.dtype, n0 + n);
        if (!in_place)
            store_row(o, m, n0, row, nb);
    }
}

static sy_status linear(void *ctx, sy_stream stream, const sy_linear_args *a, sy_error *err)
{
    linear_cpu *c = ctx;
    (void)stream;
    sy_status st = sy_linear_check_args(a, err);
    if (st != SY_OK)
        return st;
    if (!c)
        return sy_op_fail(err, SY_E_INVALID, "linear: ctx is NULL (init was not called)");
    const size_t M = (size_t)a->x.shape[0], K = (size_t)a->x.shape[1], N = (size_t)a->w.shape[0];
    if (M == 0 || N == 0)
        return SY_OK;
    sy_linear_out out;
    sy_linear_out_of(a, &out);
    /* sgemm writes straight into an f32 y of one part; anything else goes through a scratch block. */
    const int w_f32 = a->w.dtype == SY_DTYPE_F32, y_f32 = out.n == 1 && out.part[0]->dtype == SY_DTYPE_F32;
    size_t nb = w_f32 ? N : W_BLOCK_BYTES / (sizeof(float) * K);
    nb = nb < W_BLOCK_MIN_ROWS ? W_BLOCK_MIN_ROWS : nb;
    nb = nb > N ? N : nb;
    size_t x_floats = a->x.dtype == SY_DTYPE_F32 ? 0 : M * K, w_floats = w_f32 ? 0 : nb * K;
    size_t y_floats = y_f32 ? 0 : M * nb;
    float *scratch = NULL;
    st = sy_cpu_workspace_reserve(&c->ws, sizeof(float) * (x_floats + w_floats + y_floats), (void **)&scratch, err);
    if (st != SY_OK)
        return st;
    float *xs = scratch, *ws = scratch + x_floats, *ys = ws + w_floats;

    const float *xf = a->x.data;
    /* A single row's stride is free in the tensor view; BLAS wants it at least the row length. */
    size_t ldx = M == 1 ? K : (size_t)a->x.stride[0];
    if (a->x.dtype == SY_DTYPE_BF16) {
        bf16_rows_to_f32(a->x.data, ldx, M, K, xs);
        xf = xs;
        ldx = K;
    }
    for (size_t n0 = 0; n0 < N; n0 += nb) {
        size_t rows = N - n0 < nb ? N - n0 : nb;
        const float *wf = (const float *)a->w.data + n0 * K;
        if (!w_f32) {
            bf16_rows_to_f32((const uint16_t *)a->w.data + n0 * K, K, rows, K, ws);
            wf = ws;
        }
        float *yf = y_f32 ? (float *)out.part[0]->data + n0 : ys;
        size_t ldy = !y_f32 ? rows : M == 1 ? N : (size_t)out.part[0]->stride[0];
        /* One row is a matrix-vector product: OpenBLAS's sgemv streams W about 3x faster than its
         * sgemm does with M = 1. */
        if (M == 1)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)rows, (int)K, 1.0f, wf, (int)K, xf, 1, 0.0f, yf, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)rows, (int)K, 1.0f, xf, (int)ldx, wf,
                        (int)K, 0.0f, yf, (int)ldy);
        finish_block(a, &out, y_f32, yf, ldy, M, n0, rows);
    }
    return SY_OK;
}

const sy_linear_ops sy_linear_cpu_ops = {sizeof(sy_linear_ops), 0, linear};
