/* MXFP4 E2M1 codes to bf16 pairs by bit moves, in the k order the tensor-core MoE product feeds
 * mma.sync with (moe_mxfp4_gpu_mma.cuh), and where the activations go to be in the same order.
 * C, so that the host build tests every code in every position (tests/mxfp4). */
#ifndef SY_MXFP4_BF16_PAIRS_H
#define SY_MXFP4_BF16_PAIRS_H

#include <stdint.h>

#include "sy_portable.h"

/* Eight e2m1 codes of a word (code i in bits 4i .. 4i+3) as the bf16 pairs (0, 4), (1, 5), (2, 6),
 * (3, 7) of their values times 2^-126: each code's sign moved to its half's bit 15 and its exponent
 * and mantissa bits to bits 8 .. 6, which spells the value times 2^-126 exactly (the code 0.5 as the
 * subnormal 2^-127, which mma.sync takes as it is). Codes n and n + 4 lie 16 bits apart, so one
 * shift places both halves of a pair: two shifts and one three-input logic operation a pair. The
 * factor 2^126 goes to the other operand instead (the product's inputs are staged times
 * 2^(126 - e), moe_mxfp4_gpu_mma.cuh), where one multiply serves a whole input row rather than one
 * multiply a weight pair: that multiply was a quarter of the decode's instructions. (The idea of
 * moving the bits into place is that of Marlin's FP4 dequantization, vLLM
 * csrc/quantization/gptq_marlin.) */
SY_HD void sy_e2m1x8_to_bf16_pairs_tiny(uint32_t w, uint32_t r[4])
{
    const uint32_t sign = 0x80008000u, bits = 0x01C001C0u;
    r[0] = ((w << 12) & sign) | ((w << 6) & bits);
    r[1] = ((w << 8) & sign) | ((w << 2) & bits);
    r[2] = ((w << 4) & sign) | ((w >> 2) & bits);
    r[3] = (w & sign) | ((w >> 6) & bits);
}

/* Where element i (0 .. 7) of a group of eight k goes in the pair order of sy_e2m1x8_to_bf16_pairs_tiny:
 * 0, 4, 1, 5, 2, 6, 3, 7. The product's inputs are written so (x by the staging pass, act by w13's
 * epilogue), which makes a 16-byte read of a group the four B registers as they are, where byte
 * permutes at every read cost one instruction a tensor-core product. */
SY_HD uint32_t sy_e2m1_pair_slot(uint32_t i)
{
    return i % 4u * 2u + i / 4u;
}

#endif
