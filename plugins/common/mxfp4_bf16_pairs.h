/* MXFP4 E2M1 codes to bf16 pairs by bit moves, in the k order the tensor-core MoE product feeds
 * mma.sync with (moe_mxfp4_gpu_mma.cuh), and where the activations go to be in the same order.
 * C, so that the host build tests every code in every position (tests/mxfp4). */
#ifndef SY_MXFP4_BF16_PAIRS_H
#define SY_MXFP4_BF16_PAIRS_H

#include <stdint.h>

#include "sy_portable.h"

/* The tensor-core code order of a 32-bit word of eight E2M1 codes, which the CUDA prepare writes
 * (SY_MOE_CODES_TENSOR_PAIRS, moe_layout.h) so that sy_e2m1x8_to_bf16_pairs_tiny places a bf16
 * pair with one rotate and one mask. Pair p holds codes p and p + 4 (sy_e2m1_pair_slot); its bf16
 * needs a code's bits 0 .. 2 (mantissa, exponent) at bits 6 .. 8 and its sign, bit 3, at bit 15,
 * the other code's 16 higher. In the checkpoint's order (code i at bits 4i .. 4i+3) the sign sits
 * next to the magnitude, so every pair took two shifts and two masks. Four translates of
 * {6, 7, 8, 15} cannot tile 16 bits, but three can: pairs 0, 1 and 2 take {6, 7, 8, 15},
 * {0, 1, 2, 9} and {10, 11, 12, 19} (mod 32, the second code 16 higher), which one rotate each
 * brings to {6, 7, 8, 15}; pair 3 takes what is left, {4, 5, 14, 13}, which two rotates place.
 * This function puts a word of eight codes in the checkpoint's order (code i at bits 4i .. 4i+3)
 * in that order; it runs once per word, at prepare. */
SY_HD uint32_t sy_e2m1x8_to_pair_order(uint32_t w)
{
    /* Row p: the bits that take code p's bits 0, 1, 2 and 3 (code p + 4's are 16 higher, mod 32). */
    const uint8_t pair_bits[4][4] = {{6, 7, 8, 15}, {0, 1, 2, 9}, {10, 11, 12, 19}, {4, 5, 14, 13}};
    uint32_t out = 0;
    for (uint32_t i = 0; i < 8u; i++)
        for (uint32_t b = 0; b < 4u; b++)
            out |= (w >> (4u * i + b) & 1u) << ((pair_bits[i % 4u][b] + 16u * (i / 4u)) % 32u);
    return out;
}

/* w rotated left by n, 0 < n < 32: one funnel shift on NVIDIA GPUs. */
SY_HD uint32_t sy_rotl32(uint32_t w, uint32_t n)
{
    return w << n | w >> (32u - n);
}

/* Eight e2m1 codes of a word in the tensor-core order (sy_e2m1x8_to_pair_order) as the bf16 pairs
 * (0, 4), (1, 5), (2, 6), (3, 7) of their values times 2^-126: each code's sign at its half's bit
 * 15 and its exponent and mantissa bits at bits 8 .. 6, which spells the value times 2^-126
 * exactly (the code 0.5 as the subnormal 2^-127, which mma.sync takes as it is). One rotate and
 * one mask a pair, two rotates and two masks for pair 3: 9 instructions a word, where the
 * checkpoint's order took two shifts and two masks a pair. The factor 2^126 goes to the other
 * operand (the product's inputs are staged times 2^(126 - e), moe_mxfp4_gpu_mma.cuh), where one
 * multiply serves a whole input row rather than one multiply a weight pair. (The idea of moving
 * the bits into place is that of Marlin's FP4 dequantization, vLLM csrc/quantization/gptq_marlin.) */
SY_HD void sy_e2m1x8_to_bf16_pairs_tiny(uint32_t w, uint32_t r[4])
{
    const uint32_t pair = 0x81C081C0u; /* bits 6 .. 8 and 15 of both halves */
    r[0] = w & pair;
    r[1] = sy_rotl32(w, 6) & pair;
    r[2] = sy_rotl32(w, 28) & pair;
    r[3] = (sy_rotl32(w, 2) & 0x80C080C0u) | (sy_rotl32(w, 26) & 0x01000100u);
}

/* Where element i (0 .. 7) of a group of eight k goes in the pair order of sy_e2m1x8_to_bf16_pairs_tiny:
 * 0, 4, 1, 5, 2, 6, 3, 7. The product's inputs are written so (x by the staging pass, act by w13's
 * epilogue), which makes a 16-byte read of a group the four B registers as they are, where byte
 * permutes at every read cost one instruction a tensor-core product. */
SY_HD uint32_t sy_e2m1_pair_slot(uint32_t i)
{
    return i % 4u * 2u + i / 4u;
}

/* Where element i (0 .. 31) of an MXFP4 block of k goes for the warpgroup product
 * (moe_mxfp4_gpu_mma.cuh, WG), whose B comes from shared memory as wgmma reads it: k-step s of a
 * block is positions 16 s .. 16 s + 15, column q at position 16 s + q. Lane c of a warp decodes
 * its word c (k = 8c .. 8c+7) of a row into the pairs p = (8c + p, 8c + p + 4), and its A fragment
 * holds columns 2c, 2c + 1 (pair 2s) and 2c + 8, 2c + 9 (pair 2s + 1) of step s, as the mma.sync
 * product's does; so k = 8c + p + 4h goes to 16 (p / 2) + 8 (p % 2) + 2c + h. A permutation of
 * the 32 slots (tests/mxfp4), which the inputs are written in where the warpgroup product runs,
 * so the weights' decode stays as it is. */
SY_HD uint32_t sy_e2m1_warpgroup_slot(uint32_t i)
{
    const uint32_t c = i / 8u, p = i % 4u, h = i % 8u / 4u;
    return 16u * (p / 2u) + 8u * (p % 2u) + 2u * c + h;
}

/* Where input element i of a row goes for the product that takes it: the warpgroup product's
 * order within each block of 32, or the mma.sync product's within each group of 8. */
SY_HD uint32_t sy_e2m1_input_slot(uint32_t i, int warpgroup)
{
    return warpgroup ? (i & ~31u) + sy_e2m1_warpgroup_slot(i & 31u) : (i & ~7u) + sy_e2m1_pair_slot(i & 7u);
}

#endif
