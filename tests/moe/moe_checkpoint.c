#include "moe_checkpoint.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *random_bytes(sy_rng *rng, size_t n, uint32_t lo, uint32_t hi)
{
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(lo + sy_rng_below(rng, hi - lo + 1));
    return p;
}

moe_checkpoint moe_checkpoint_random(sy_rng *rng, uint32_t E, uint32_t H, uint32_t I, uint8_t scale_lo,
                                     uint8_t scale_hi)
{
    moe_checkpoint c = {E, H, I, (H + 255) / 256 * 256, (I + 255) / 256 * 256, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n13 = (size_t)E * 2 * I * (H / 32), n2 = (size_t)E * H * (I / 32);
    c.w13_blocks = random_bytes(rng, n13 * 16, 0, 255);
    c.w13_scales = random_bytes(rng, n13, scale_lo, scale_hi);
    c.w2_blocks = random_bytes(rng, n2 * 16, 0, 255);
    c.w2_scales = random_bytes(rng, n2, scale_lo, scale_hi);
    c.w13_bias = malloc(sizeof(float) * E * 2 * I);
    c.w2_bias = malloc(sizeof(float) * E * H);
    sy_fill_uniform_f32(rng, c.w13_bias, (size_t)E * 2 * I, -1, 1);
    sy_fill_uniform_f32(rng, c.w2_bias, (size_t)E * H, -1, 1);
    return c;
}

void moe_checkpoint_free(moe_checkpoint *c)
{
    free(c->w13_blocks);
    free(c->w13_scales);
    free(c->w2_blocks);
    free(c->w2_scales);
    free(c->w13_bias);
    free(c->w2_bias);
    memset(c, 0, sizeof *c);
}

sy_tensor moe_tensor(void *data, int32_t dtype, int32_t ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t shape[4] = {d0, d1, d2, d3};
    return sy_tensor_contiguous(data, dtype, ndim, shape);
}

sy_moe_prepare_args moe_checkpoint_prepare_args(const moe_checkpoint *c, const sy_moe_shape *shape, void *prepared)
{
    sy_moe_prepare_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.shape = *shape;
    a.w13_blocks = moe_tensor(c->w13_blocks, SY_DTYPE_U8, 4, c->E, 2 * c->I, c->H / 32, 16);
    a.w13_scales = moe_tensor(c->w13_scales, SY_DTYPE_U8, 3, c->E, 2 * c->I, c->H / 32, 0);
    a.w13_bias = moe_tensor(c->w13_bias, SY_DTYPE_F32, 2, c->E, 2 * c->I, 0, 0);
    a.w2_blocks = moe_tensor(c->w2_blocks, SY_DTYPE_U8, 4, c->E, c->H, c->I / 32, 16);
    a.w2_scales = moe_tensor(c->w2_scales, SY_DTYPE_U8, 3, c->E, c->H, c->I / 32, 0);
    a.w2_bias = moe_tensor(c->w2_bias, SY_DTYPE_F32, 2, c->E, c->H, 0, 0);
    a.prepared = prepared;
    return a;
}

/* OCP MX E2M1 by code; element 32g + 2j + h = FP4[(B[g][j] >> 4h) & 15] * 2^(S[g] - 127). */
static const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

static float *dequant(const uint8_t *blocks, const uint8_t *scales, size_t rows, uint32_t k)
{
    float *w = malloc(sizeof(float) * rows * k);
    for (size_t r = 0; r < rows; r++)
        for (uint32_t col = 0; col < k; col++) {
            uint8_t byte = blocks[(r * (k / 32) + col / 32) * 16 + (col % 32) / 2];
            int e = scales[r * (k / 32) + col / 32];
            w[r * k + col] = (float)ldexp(e2m1[(byte >> (4 * (col % 2))) & 15], e - 127);
        }
    return w;
}

float *moe_checkpoint_dequant_w13(const moe_checkpoint *c)
{
    return dequant(c->w13_blocks, c->w13_scales, (size_t)c->E * 2 * c->I, c->H);
}

float *moe_checkpoint_dequant_w2(const moe_checkpoint *c)
{
    return dequant(c->w2_blocks, c->w2_scales, (size_t)c->E * c->H, c->I);
}
