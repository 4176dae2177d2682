/* Greedy token choice, the one rule every backend follows: the index of the largest logit, ties to
 * the lower index, NaN never chosen (a row of NaN only gives 0). sy_greedy_prefers is that rule as
 * an order on (value, index) pairs, so a device can reduce a row in any grouping and land on the
 * same index; sy_greedy_token is the host's fast form of it. */
#ifndef SY_GREEDY_H
#define SY_GREEDY_H

#include <math.h>
#include <stdint.h>

#include "sy_portable.h"

/* Whether (v, i) is preferred over (best, best_i). Start a reduction from (NaN, 0). */
SY_HD int sy_greedy_prefers(float v, uint32_t i, float best, uint32_t best_i)
{
    return v == v && (best != best || v > best || (v == best && i < best_i));
}

/* What makes a greedy_rows call invalid (sy_backend_desc.greedy_rows), or NULL when it is valid;
 * every backend refuses the same calls with the same words. */
static inline const char *sy_greedy_rows_invalid(const float *x, uint32_t rows, uint32_t cols, uint64_t row_stride,
                                                 const uint32_t *out)
{
    if (rows == 0)
        return NULL;
    if (!x || !out)
        return !x ? "greedy_rows: x is NULL" : "greedy_rows: out is NULL";
    if (cols == 0)
        return "greedy_rows: rows of 0 values have no greedy token";
    if (rows > 1 && row_stride < cols)
        return "greedy_rows: row_stride is shorter than a row";
    if ((uintptr_t)x % sizeof(float) != 0)
        return "greedy_rows: x is not aligned to a float";
    return NULL;
}

/* The host form, for C sources (the device reduces with sy_greedy_prefers alone). */
#if !defined(__CUDACC__) && !defined(__HIPCC__)
enum { SY_GREEDY_BLOCK = 1024, SY_GREEDY_LANES = 16 };

/* The largest number of x[0..n) (-inf when none): independent lanes, so the compiler keeps them in
 * vector registers; a NaN never passes the > test. */
static inline float sy_greedy_block_max(const float *x, uint32_t n)
{
    float lane[SY_GREEDY_LANES];
    for (uint32_t j = 0; j < SY_GREEDY_LANES; j++)
        lane[j] = -INFINITY;
    uint32_t i = 0;
    for (; i + SY_GREEDY_LANES <= n; i += SY_GREEDY_LANES)
        for (uint32_t j = 0; j < SY_GREEDY_LANES; j++)
            lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
    for (; i < n; i++)
        lane[0] = x[i] > lane[0] ? x[i] : lane[0];
    float m = lane[0];
    for (uint32_t j = 1; j < SY_GREEDY_LANES; j++)
        m = lane[j] > m ? lane[j] : m;
    return m;
}

/* At 201088 logits a row and 128 rows a step the host may run this every decode step, so it is
 * two passes that vectorize: the maximum of each block, then the first index of the best block's
 * maximum (the first block that reaches the maximum holds its first index). Rows without a number
 * above -inf take the plain pairwise rule. */
static inline uint32_t sy_greedy_token(const float *x, uint32_t n)
{
    float best = -INFINITY;
    uint32_t best_block = n;
    for (uint32_t b0 = 0; b0 < n; b0 += SY_GREEDY_BLOCK) {
        float m = sy_greedy_block_max(x + b0, n - b0 < SY_GREEDY_BLOCK ? n - b0 : SY_GREEDY_BLOCK);
        if (m > best) {
            best = m;
            best_block = b0;
        }
    }
    if (best_block == n) {
        float v = NAN;
        uint32_t at = 0;
        for (uint32_t i = 0; i < n; i++)
            if (sy_greedy_prefers(x[i], i, v, at)) {
                v = x[i];
                at = i;
            }
        return at;
    }
    uint32_t end = n - best_block < SY_GREEDY_BLOCK ? n : best_block + SY_GREEDY_BLOCK;
    for (uint32_t i = best_block; i < end; i++)
        if (x[i] == best)
            return i;
    return best_block; /* not reached: the block's maximum is one of its elements */
}
#endif

#endif
