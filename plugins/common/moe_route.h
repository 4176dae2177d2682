/* MoE routing of one token, for host and device code alike: the top_k largest router logits, then
 * a softmax over those k (gpt-oss: openai/gpt-oss gpt_oss/torch/model.py MLPBlock.forward, topk
 * sorted, then softmax of the k values).
 *
 * Order and ties: ids come out in descending logit order; equal logits rank the lower expert id
 * first (torch.topk leaves ties unspecified; a fixed rule keeps every backend in agreement). A NaN
 * logit ranks below every number, so it is chosen only when fewer than k logits are numbers.
 * Weights: NaN for all k when a chosen logit is NaN, the largest is +inf, or all are -inf (the
 * subtraction of the largest gives NaN): an overflowed router never yields plausible weights. */
#ifndef SY_MOE_ROUTE_H
#define SY_MOE_ROUTE_H

#include <math.h>
#include <stdint.h>

#include "sy_portable.h"

enum { SY_MOE_MAX_TOP_K = 32 };

/* 1 when (a, ia) ranks before (b, ib). */
SY_HD int sy_moe_ranks_before(float a, uint32_t ia, float b, uint32_t ib)
{
    int a_nan = a != a, b_nan = b != b;
    if (a_nan || b_nan)
        return a_nan == b_nan ? ia < ib : b_nan;
    return a > b || (a == b && ia < ib);
}

/* The k chosen logits best[0 .. k) in rank order and their experts -> ids[k] and weights[k] (the
 * softmax of the k): how every implementation of the routing finishes, whatever its search. */
SY_HD void sy_moe_route_softmax(const float *best, const uint32_t *best_id, uint32_t k, int32_t *ids, float *weights)
{
    /* Subtracting the largest keeps exp in range; it cancels in the ratio. */
    float sum = 0.0f;
    for (uint32_t j = 0; j < k; j++) {
        weights[j] = expf(best[j] - best[0]);
        sum += weights[j];
    }
    for (uint32_t j = 0; j < k; j++) {
        weights[j] /= sum;
        ids[j] = (int32_t)best_id[j];
    }
}

/* logits[experts] -> ids[k] (descending) and weights[k] (softmax over the k chosen logits).
 * Requires 1 <= k <= min(experts, SY_MOE_MAX_TOP_K). */
SY_HD void sy_moe_route_token(const float *logits, uint32_t experts, uint32_t k, int32_t *ids, float *weights)
{
    float best[SY_MOE_MAX_TOP_K];
    uint32_t best_id[SY_MOE_MAX_TOP_K];
    uint32_t n = 0;
    for (uint32_t e = 0; e < experts; e++) {
        float v = logits[e];
        if (n == k && !sy_moe_ranks_before(v, e, best[k - 1], best_id[k - 1]))
            continue;
        uint32_t pos = n < k ? n++ : k - 1;
        while (pos > 0 && sy_moe_ranks_before(v, e, best[pos - 1], best_id[pos - 1])) {
            best[pos] = best[pos - 1];
            best_id[pos] = best_id[pos - 1];
            pos--;
        }
        best[pos] = v;
        best_id[pos] = e;
    }
    sy_moe_route_softmax(best, best_id, k, ids, weights);
}

#endif
