/* The project's own bf16, f16 and fp8_e4m3 conversions, bit-exact and identical on the host, in CUDA
 * and in HIP (Debian's HIP 5.2 has no fp8 types, and toolkits differ in their rounding helpers).
 *
 * bf16: the top 16 bits of an IEEE f32; f32 -> bf16 rounds to nearest even, NaN stays NaN (quiet).
 * fp8_e4m3 (OCP "e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; S.1111.111
 * is NaN; largest finite 448. f32 -> fp8 rounds to nearest even and saturates to +-448 (infinities
 * included); NaN maps to NaN. f16 (IEEE binary16) -> f32 is exact, NaN payload and sign kept.
 * Formats: OCP 8-bit Floating Point Specification (OFP8) rev 1.0; IEEE 754-2008. */
#ifndef SY_NUMERIC_H
#define SY_NUMERIC_H

#include <stdint.h>
#include <string.h>

#include "sy_portable.h"

SY_HD uint32_t sy_f32_bits(float x)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

SY_HD float sy_f32_from_bits(uint32_t u)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

SY_HD float sy_bf16_to_f32(uint16_t h)
{
    return sy_f32_from_bits((uint32_t)h << 16);
}

SY_HD uint16_t sy_f32_to_bf16(float x)
{
    uint32_t u = sy_f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* NaN: keep sign and payload top, force quiet */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Round an f32 to the nearest bf16 value, staying in f32. */
SY_HD float sy_round_bf16(float x)
{
    return sy_bf16_to_f32(sy_f32_to_bf16(x));
}

/* IEEE binary16 -> f32, exact (every f16 value is an f32 value). */
SY_HD float sy_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (uint32_t)(h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1Fu)
        return sy_f32_from_bits(sign | 0x7F800000u | m << 13);
    if (e == 0) { /* subnormal: m 2^-24 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return sy_f32_from_bits(sign | (e + 112u) << 23 | m << 13);
}

SY_HD float sy_fp8e4m3_to_f32(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t e = (b >> 3) & 0xFu, m = b & 7u;
    if (e == 15u && m == 7u)
        return sy_f32_from_bits(sign | 0x7FC00000u);
    if (e == 0u) {
        float v = (float)m * 0.001953125f; /* m * 2^-9, exact */
        return sign ? -v : v;
    }
    return sy_f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
}

SY_HD uint8_t sy_f32_to_fp8e4m3(float x)
{
    uint32_t u = sy_f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    u &= 0x7FFFFFFFu;
    if (u > 0x7F800000u)
        return (uint8_t)(sign | 0x7Fu);
    if (u >= 0x43E00000u) /* >= 448 (and +inf): saturate */
        return (uint8_t)(sign | 0x7Eu);
    if (u >= 0x3C800000u) { /* >= 2^-6: normal in fp8 */
        uint32_t e = (u >> 23) - 120u;
        uint32_t mant = u & 0x7FFFFFu;
        uint32_t q = (e << 3) | (mant >> 20);
        uint32_t rem = mant & 0xFFFFFu;
        if (rem > 0x80000u || (rem == 0x80000u && (q & 1u)))
            q++;
        if (q > 0x7Eu)
            q = 0x7Eu;
        return (uint8_t)(sign | q);
    }
    uint32_t E = u >> 23;
    if (E < 117u) /* below 2^-10: rounds to zero */
        return sign;
    /* Subnormal: q = round_half_even(|x| * 2^9), |x| = sig * 2^(E - 150). */
    uint32_t sig = (u & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 141u - E; /* 21 .. 24 */
    uint32_t q = sig >> shift;
    uint32_t rem = sig & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return (uint8_t)(sign | q);
}

#endif
