/* The host attention core: softmax(scale * q.k) v over key ranges of one KV head, as partials
 * (running max m, denominator l, numerator acc) that decode and prefill drivers combine with the
 * log-sum-exp rule. K and V come from a paged pool in any layout sy_kv_addr.h addresses or from a
 * linear [T, H, D] tensor, in f32, bf16 or fp8_e4m3 (dequantized as fp8 * scale).
 *
 * Arithmetic (f32 throughout): rows are visited in tiles of SY_ATTN_TILE keys aligned to absolute
 * key positions; per tile, s_j = scale * q.k_j (summed in an order fixed by D), m' = max(m, max_j s_j),
 * l = l e^(m - m') + sum_j e^(s_j - m'), acc = acc e^(m - m') + sum_j e^(s_j - m') v_j. Every step
 * depends only on the row's own key range and the key values, never on the storage layout, the
 * other rows of the call, or where the keys sit in memory: the same keys give bit-identical results
 * from either layout, and a query's output does not depend on which batch it was computed in. */
#ifndef SY_ATTN_CPU_CORE_H
#define SY_ATTN_CPU_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "sy_kv_addr.h"

#define SY_ATTN_TILE 64

/* The keys and values of one sequence. */
typedef struct sy_attn_kv_view {
    int32_t dtype;       /* f32, bf16 or fp8_e4m3 */
    const void *k;
    const void *v;
    uint32_t head_dim;
    const float *k_lut;  /* fp8: the 256 codes dequantized with k_scale folded in; NULL otherwise */
    const float *v_lut;
    /* Paged (block_table != NULL): key position t lives at slot block_table[t / P] * P + t % P. */
    sy_kv_dims dims;
    const int32_t *block_table;
    /* Linear: key position t of head h is row (row0 + t) of K at (row0 + t) * k_strides[0] +
     * h * k_strides[1], and likewise for V. */
    int64_t row0;
    int64_t k_strides[2];
    int64_t v_strides[2];
} sy_attn_kv_view;

/* Rows that share one KV head (a GQA group, and for prefill several queries): each has its own
 * query vector and key range [lo, hi), and receives its partial. */
typedef struct sy_attn_rows {
    uint32_t n;
    const float *q;     /* [n][D] */
    const int64_t *lo;  /* [n] */
    const int64_t *hi;  /* [n] */
    float *m;           /* out [n]: -inf for an empty range */
    float *l;           /* out [n]: 0 for an empty range */
    float *acc;         /* out [n][D] */
} sy_attn_rows;

/* Floats of scratch sy_attn_cpu_partial needs for `rows` rows of head_dim D. */
size_t sy_attn_cpu_scratch_floats(uint32_t rows, uint32_t head_dim);

/* Fills the 256-entry fp8 dequant table: lut[c] = fp8_e4m3(c) * scale (NaN codes stay NaN). */
void sy_attn_cpu_fp8_lut(float scale, float *lut);

/* The partials of every row against kv head `kv_head`. */
void sy_attn_cpu_partial(const sy_attn_kv_view *kv, uint32_t kv_head, const sy_attn_rows *rows, float scale,
                         float *scratch);

/* out[D] = sum_i e^(m_i - M) acc_i / (sum_i e^(m_i - M) l_i + e^(sink - M)), M = max(max_i m_i, sink),
 * over `parts` partials of one row, part i at m[i * part_stride], l[i * part_stride],
 * acc[i * part_stride * D]. The sink (NULL for none) is a logit of its own, unscaled, in the
 * denominator only; a row without keys or sink gives zeros. */
void sy_attn_cpu_combine(uint32_t parts, size_t part_stride, uint32_t head_dim, const float *m, const float *l,
                         const float *acc, const float *sink, float *out);

#endif
