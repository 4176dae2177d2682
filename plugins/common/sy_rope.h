/* RoPE frequencies with YaRN scaling and the attention concentration, for host and device code.
 *
 * gpt-oss (openai/gpt-oss gpt_oss/torch/model.py, RotaryEmbedding._compute_concentration_and_inv_freq;
 * YaRN: Peng et al., arXiv:2309.00071, "NTK-by-parts" interpolation): with D the rotated dims,
 * freq_i = theta^(2i / D) for i < D/2, and for a scaling factor > 1
 *   concentration = 0.1 * ln(factor) + 1
 *   low  = D/2 * ln(L / (beta_fast * 2 pi)) / ln(theta),  high = D/2 * ln(L / (beta_slow * 2 pi)) / ln(theta)
 *   ramp = clamp((i - low) / (high - low), 0, 1)
 *   inv_freq_i = (1 - ramp) / freq_i + ramp / (factor * freq_i)
 * (L = original max positions; the reference's ntk_beta is beta_fast = 32, ntk_alpha is beta_slow
 * = 1; low and high are not rounded, unlike the YaRN code with truncation). Without scaling
 * inv_freq_i = 1 / freq_i and the default concentration is 1 (a nonzero params.concentration
 * replaces the default either way). cos and sin of position * inv_freq_i are
 * multiplied by the concentration. NeoX half-split rotation: x1 = x[i], x2 = x[i + D/2],
 * out[i] = x1 cos - x2 sin, out[i + D/2] = x2 cos + x1 sin.
 *
 * Everything here is double: the reference evaluates freq, inv_freq and position * inv_freq in
 * f32, whose angle error grows with the position (about 1e-2 rad at 131072); doubles keep the
 * rotation accurate to f32 at every int32 position. */
#ifndef SY_ROPE_H
#define SY_ROPE_H

#include <math.h>
#include <stdint.h>

#include "switchyard/plugin.h"
#include "sy_portable.h"

#define SY_ROPE_TWO_PI 6.283185307179586476925286766559

SY_HD int sy_rope_uses_yarn(const sy_rope_params *p)
{
    return p->scaling == SY_ROPE_SCALING_YARN && p->yarn_factor > 1.0f;
}

/* The multiplier of cos and sin: params.concentration, or when it is 0 the YaRN default. */
SY_HD double sy_rope_concentration(const sy_rope_params *p)
{
    if (p->concentration != 0.0f)
        return p->concentration;
    return sy_rope_uses_yarn(p) ? 0.1 * log((double)p->yarn_factor) + 1.0 : 1.0;
}

/* The YaRN ramp bounds low and high, in units of the frequency index i. */
SY_HD void sy_rope_yarn_bounds(const sy_rope_params *p, double *low, double *high)
{
    double half = p->head_dim / 2.0, L = p->yarn_original_max_position, ln_theta = log((double)p->theta);
    *low = half * log(L / ((double)p->yarn_beta_fast * SY_ROPE_TWO_PI)) / ln_theta;
    *high = half * log(L / ((double)p->yarn_beta_slow * SY_ROPE_TWO_PI)) / ln_theta;
}

/* Angular frequency of rotated pair i (0 <= i < head_dim / 2). */
SY_HD double sy_rope_inv_freq(const sy_rope_params *p, uint32_t i)
{
    double freq = pow((double)p->theta, 2.0 * i / p->head_dim);
    if (!sy_rope_uses_yarn(p))
        return 1.0 / freq;
    double low, high;
    sy_rope_yarn_bounds(p, &low, &high);
    double ramp = (i - low) / (high - low);
    ramp = ramp < 0.0 ? 0.0 : ramp > 1.0 ? 1.0 : ramp;
    return (1.0 - ramp) / freq + ramp / ((double)p->yarn_factor * freq);
}

#endif
