/* MXFP4 E2M1 codes to bf16 pairs by bit moves, in the k order the tensor-core MoE product feeds
 * mma.sync with (moe_mxfp4_gpu_mma.cuh), and where the activations go to be in the same order.
 * C, so that the host build tests every code in every position (tests/mxfp4); on the device the
 * exact multiply is one instruction. */
#ifndef SY_MXFP4_BF16_PAIRS_H
#define SY_MXFP4_BF16_PAIRS_H

#include <stdint.h>
#include <string.h>

#include "sy_portable.h"

/* Both halves of a bf16 pair times 2^126, exact for the values sy_e2m1x8_to_bf16_pairs builds (at
 * most two significant bits, the smallest 2^-127, a bf16 subnormal): on the device an fma with -0
 * (so that a -0 stays -0), which sm_80 has; on the host through f32, which holds those values. */
SY_HD uint32_t sy_bf16x2_times_2_126(uint32_t pair)
{
#if defined(__CUDA_ARCH__)
    uint32_t r;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(r) : "r"(pair), "r"(0x7E807E80u), "r"(0x80008000u));
    return r;
#else
    uint32_t r = 0;
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t in = (pair >> 16 * h & 0xFFFFu) << 16;
        float f;
        memcpy(&f, &in, sizeof f);
        f *= 0x1p126f;
        uint32_t out;
        memcpy(&out, &f, sizeof out);
        r |= (out >> 16) << 16 * h;
    }
    return r;
#endif
}

/* Eight e2m1 codes of a word (code i in bits 4i .. 4i+3) as the bf16 pairs (0, 4), (1, 5), (2, 6),
 * (3, 7): each code's sign moved to its half's bit 15 and its exponent and mantissa bits to bits
 * 8 .. 6, which spells the value times 2^-126 (a bf16 subnormal for the code 0.5), then one exact
 * multiply by 2^126. Codes n and n + 4 lie 16 bits apart, so one shift places both halves of a pair.
 * (The idea of moving the bits into place is that of Marlin's FP4 dequantization, vLLM
 * csrc/quantization/gptq_marlin.) */
SY_HD void sy_e2m1x8_to_bf16_pairs(uint32_t w, uint32_t r[4])
{
    const uint32_t sign = 0x80008000u, bits = 0x01C001C0u;
    r[0] = sy_bf16x2_times_2_126(((w << 12) & sign) | ((w << 6) & bits));
    r[1] = sy_bf16x2_times_2_126(((w << 8) & sign) | ((w << 2) & bits));
    r[2] = sy_bf16x2_times_2_126(((w << 4) & sign) | ((w >> 2) & bits));
    r[3] = sy_bf16x2_times_2_126((w & sign) | ((w >> 6) & bits));
}

/* Where element i (0 .. 7) of a group of eight k goes in the pair order of sy_e2m1x8_to_bf16_pairs:
 * 0, 4, 1, 5, 2, 6, 3, 7. The product's inputs are written so (x by the staging pass, act by w13's
 * epilogue), which makes a 16-byte read of a group the four B registers as they are, where byte
 * permutes at every read cost one instruction a tensor-core product. */
SY_HD uint32_t sy_e2m1_pair_slot(uint32_t i)
{
    return i % 4u * 2u + i / 4u;
}

#endif
