/* Counter-based synthetic weights: element i of tensor t under seed s is a pure function of
 * (s, t, i), so any backend can generate the same weights where they live, in any order, with no
 * copy, and two runs with one seed are identical. The mixer is splitmix64's finalizer (Steele,
 * Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014). */
#ifndef SY_SYNTH_H
#define SY_SYNTH_H

#include <stdint.h>

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

/* Uniform in [-1, 1). */
SY_HD float sy_synth_uniform(uint64_t seed, uint32_t tensor, uint64_t i)
{
    return (float)((double)(sy_synth_bits(seed, tensor, i) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

#endif
