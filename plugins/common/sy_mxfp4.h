/* MXFP4 decoding of the gpt-oss checkpoint format, for host and device code alike.
 *
 * A tensor [.., N, K] is stored as blocks [.., N, K/32, 16] (u8) and scales [.., N, K/32] (u8):
 * 32 values a block, two 4-bit E2M1 codes a byte, the low nibble holding the even element;
 * W[.., n, 32g + 2j + h] = e2m1((B[.., n, g, j] >> 4h) & 0xF) * e8m0(S[.., n, g]).
 * Sources: openai/gpt-oss gpt_oss/torch/weights.py (FP4 value table, ldexp by scale - 127);
 * OCP Microscaling Formats (MX) Specification v1.0, sections 5.3.3 (E2M1) and 5.4.1 (E8M0).
 *
 * E2M1: 1 sign, 2 exponent (bias 1), 1 mantissa bit, no infinities or NaN:
 *   codes 0..7 = +0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8..15 are the same magnitudes negated.
 * E8M0: a bare biased exponent, 2^(e - 127). Byte 0 gives 2^-127 (an f32 subnormal, exact).
 * Byte 255 is NaN, as the OCP MX specification defines it (the gpt-oss torch loader's ldexp
 * would give +inf instead; both poison every value of the block, NaN says so more plainly).
 * Decoded values are exact in f32 (a 2-bit significand times a power of two; 0.5 * 2^-127 is
 * still a subnormal) except past f32's range: with scale bytes 253 and 254, magnitudes of 2^128
 * and more become +-inf, the IEEE rounding of the true value. */
#ifndef SY_MXFP4_H
#define SY_MXFP4_H

#include <stdint.h>

#include "sy_numeric.h"
#include "sy_portable.h"

enum {
    SY_MXFP4_BLOCK = 32,       /* values sharing one scale */
    SY_MXFP4_BLOCK_BYTES = 16, /* packed bytes of one block */
    SY_E8M0_ONE = 0x7F,        /* the scale byte of 1.0: the neutral value used for padding */
    SY_E8M0_NAN = 0xFF
};

/* E2M1 code (low 4 bits of `code`) to f32, built from its bits so that device code needs no table:
 * exponent field 0 is the subnormal pair {0, 0.5}, otherwise (1 + m/2) * 2^(e-1). */
SY_HD float sy_e2m1_to_f32(uint32_t code)
{
    uint32_t sign = (code & 8u) << 28;
    uint32_t e = (code >> 1) & 3u, m = code & 1u;
    uint32_t magnitude = e == 0u ? (m ? 0x3F000000u : 0u) : ((e + 126u) << 23) | (m << 22);
    return sy_f32_from_bits(sign | magnitude);
}

/* E8M0 scale byte to f32: 2^(e - 127); 255 is NaN. Without branches, since GPU kernels convert
 * scales in their inner loops: e << 23 is the f32 for 1 <= e <= 254; the maximum with 0x00400000
 * makes e = 0 the subnormal 2^-127 (every other e << 23 is larger), and for e = 255 alone
 * (e + 1) >> 8 is 1, which sets the quiet bit of the infinity 255 << 23. */
SY_HD float sy_e8m0_to_f32(uint8_t e)
{
    const uint32_t shifted = (uint32_t)e << 23;
    const uint32_t at_least_subnormal = shifted > 0x00400000u ? shifted : 0x00400000u;
    return sy_f32_from_bits(at_least_subnormal | (((uint32_t)e + 1u) >> 8) << 22);
}

/* Element j (0..31) of one 16-byte block. */
SY_HD float sy_mxfp4_element(const uint8_t *block, uint8_t scale, uint32_t j)
{
    uint32_t code = (uint32_t)(block[j >> 1] >> ((j & 1u) * 4u)) & 0xFu;
    return sy_e2m1_to_f32(code) * sy_e8m0_to_f32(scale);
}

/* All 32 elements of one block, in order. */
SY_HD void sy_mxfp4_decode_block(const uint8_t *block, uint8_t scale, float *out)
{
    float s = sy_e8m0_to_f32(scale);
    for (uint32_t j = 0; j < SY_MXFP4_BLOCK_BYTES; j++) {
        out[2 * j] = sy_e2m1_to_f32(block[j] & 0xFu) * s;
        out[2 * j + 1] = sy_e2m1_to_f32((uint32_t)block[j] >> 4) * s;
    }
}

#endif
