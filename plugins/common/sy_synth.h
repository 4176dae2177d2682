/* Counter-based synthetic weights: element i of tensor t under seed s is a pure function of
 * (s, t, i), so any backend can generate the same weights where they live, in any order, with no
 * copy, and two runs with one seed are identical. The mixer is splitmix64's finalizer (Steele,
 * Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014). */
#ifndef SY_SYNTH_H
#define SY_SYNTH_H

#include <stdint.h>

#include <math.h>

#include "sy_numeric.h"
#include "sy_portable.h"

SY_HD uint64_t sy_synth_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

SY_HD uint64_t sy_synth_bits(uint64_t seed, uint32_t tensor, uint64_t i)
{
    uint64_t stream = sy_synth_mix(seed * 0x9E3779B97F4A7C15ull + ((uint64_t)tensor << 1) + 1u);
    return sy_synth_mix(stream + (i + 1u) * 0x9E3779B97F4A7C15ull);
}

/* Uniform in [-1, 1) on a grid of 2^-23: exact in f32, so host and device agree bit for bit. */
SY_HD float sy_synth_uniform(uint64_t seed, uint32_t tensor, uint64_t i)
{
    return (float)(int32_t)((sy_synth_bits(seed, tensor, i) >> 40) - (1u << 23)) * (1.0f / 8388608.0f);
}

/* One element of a synthetic tensor (sy_synth_spec in backend.h): bf16 bits for
 * SY_SYNTH_BF16_UNIFORM, a byte otherwise. fmaf keeps offset + scale * u one rounding everywhere. */
SY_HD uint16_t sy_synth_element(uint32_t kind, uint64_t seed, uint32_t tensor, uint64_t i, float scale, float offset,
                                uint32_t e8m0_base, uint32_t e8m0_span)
{
    if (kind == 1u) /* SY_SYNTH_BF16_UNIFORM */
        return sy_f32_to_bf16(fmaf(scale, sy_synth_uniform(seed, tensor, i), offset));
    if (kind == 2u) /* SY_SYNTH_BYTES */
        return (uint16_t)((sy_synth_bits(seed, tensor, i) >> 24) & 0xFFu);
    return (uint16_t)(e8m0_base + (uint32_t)(sy_synth_bits(seed, tensor, i) % (e8m0_span ? e8m0_span : 1u)));
}

#endif
