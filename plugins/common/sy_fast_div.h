/* Unsigned 32-bit division by a divisor fixed for a whole kernel call, as one multiply-high, one
 * add and one shift. A GPU has no integer divide instruction: a division by a run-time value is
 * about twenty instructions, and the prefill kernels divide every row index by a head count.
 *
 * Granlund and Montgomery, "Division by Invariant Integers using Multiplication" (PLDI 1994),
 * section 4, Figure 4.1: with l = ceil(log2 d) and m = floor(2^32 (2^l - d) / d) + 1,
 * n / d = (mulhi(m, n) + n) >> l for every 32-bit n for which that sum does not wrap; mulhi(m, n)
 * is at most n, so every n below 2^31 qualifies. */
#ifndef SY_FAST_DIV_H
#define SY_FAST_DIV_H

#include <stdint.h>

#include "sy_portable.h"

typedef struct sy_fast_div {
    uint32_t divisor, mul, shift;
} sy_fast_div;

/* Numerators must be below this (sy_fast_div_quot). */
#define SY_FAST_DIV_NUMERATOR_LIMIT 0x80000000u

/* d from 1 to 2^31. */
SY_HD sy_fast_div sy_fast_div_of(uint32_t d)
{
    uint32_t l = 0;
    while (((uint64_t)1 << l) < d)
        l++;
    sy_fast_div f;
    f.divisor = d;
    f.mul = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << l) - d)) / d + 1u);
    f.shift = l;
    return f;
}

/* n / f.divisor for n below SY_FAST_DIV_NUMERATOR_LIMIT. */
SY_HD uint32_t sy_fast_div_quot(sy_fast_div f, uint32_t n)
{
    const uint32_t high = (uint32_t)(((uint64_t)n * f.mul) >> 32);
    return (high + n) >> f.shift;
}

/* n % f.divisor, for the same n. */
SY_HD uint32_t sy_fast_div_rem(sy_fast_div f, uint32_t n)
{
    return n - sy_fast_div_quot(f, n) * f.divisor;
}

#endif
