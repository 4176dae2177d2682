#include "attn_reference.h"

#include <math.h>
#include <stdlib.h>

void sy_ref_attend(const float *q, uint32_t D, const float *k, const float *v, size_t row_stride, int64_t lo,
                   int64_t hi, double scale, const float *sink, double *out, sy_ref_stats *stats)
{
    int64_t n = hi > lo ? hi - lo : 0;
    double *logit = malloc((size_t)(n ? n : 1) * sizeof *logit);
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        double dot = 0;
        for (uint32_t d = 0; d < D; d++)
            dot += (double)q[d] * (double)k[(size_t)(lo + j) * row_stride + d];
        logit[j] = scale * dot;
        m = logit[j] > m ? logit[j] : m;
    }
    double key_max = m, all_max = sink && (double)*sink > m ? (double)*sink : m;
    double den = sink ? exp((double)*sink - all_max) : 0.0, key_sum = 0;
    for (uint32_t d = 0; d < D; d++)
        out[d] = 0;
    for (int64_t j = 0; j < n; j++) {
        double p = exp(logit[j] - all_max);
        den += p;
        key_sum += exp(logit[j] - key_max);
        for (uint32_t d = 0; d < D; d++)
            out[d] += p * (double)v[(size_t)(lo + j) * row_stride + d];
    }
    for (uint32_t d = 0; d < D; d++)
        out[d] = den > 0 ? out[d] / den : 0.0;
    if (stats) {
        stats->max_logit = key_max;
        stats->sum_exp = key_sum;
    }
    free(logit);
}
