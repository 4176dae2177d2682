/* Attention in double precision, straight from the definition, for the attention suites:
 * out = sum_j p_j v_j / (sum_j p_j + e^(sink - m)), p_j = e^(scale q.k_j - m), m the largest logit
 * (the sink included), over keys j in [lo, hi). */
#ifndef SY_TEST_ATTN_REFERENCE_H
#define SY_TEST_ATTN_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sy_ref_stats {
    double max_logit; /* m over the keys alone */
    double sum_exp;   /* sum_j e^(scale q.k_j - max_logit) */
} sy_ref_stats;

/* Key j of the head: k[j * row_stride .. + D), v likewise. sink may be NULL; stats may be NULL. */
void sy_ref_attend(const float *q, uint32_t D, const float *k, const float *v, size_t row_stride, int64_t lo,
                   int64_t hi, double scale, const float *sink, double *out, sy_ref_stats *stats);

#endif
