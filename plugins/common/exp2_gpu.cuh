/* Base-2 exponentials of the tensor-core attention kernels' softmax: on the SM's exponential unit
 * (MUFU, 16 a cycle an SM on sm_90), and on the FMA pipe (128 a cycle) for a share of a tile's
 * probabilities, so that the two units work side by side. */
#ifndef SY_EXP2_GPU_CUH
#define SY_EXP2_GPU_CUH

#include <math.h>
#include <stdint.h>

#include "sy_elem_gpu.cuh"
#include "sy_numeric.h"

/* 2^x on the exponential unit (flushes results below 2^-126 to zero, -inf to 0). */
SY_DEV float sy_exp2_unit(float x)
{
#if defined(SY_EMU_TENSOR_CORES)
    return exp2f(x);
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
#endif
}

/* Coefficients of the cubic 2^f ~ c0 + c1 f + c2 f^2 + c3 f^3 on [-1/2, 1/2], fitted here for the
 * least largest relative error (Lawson's iteration on 2001 points; 7.5e-5 at most), far inside the
 * 2^-9 that rounding P to bf16 costs. */
#define SY_EXP2_FMA_C0 0.999928057f
#define SY_EXP2_FMA_C1 0.693261027f
#define SY_EXP2_FMA_C2 0.242611572f
#define SY_EXP2_FMA_C3 0.0551717691f

/* 2^x for x <= 0 on the FMA pipe (the software exponential of FlashAttention-4, Zadouri et al.,
 * 2025): x = j + f with j the nearest integer and f in [-1/2, 1/2]; adding 1.5 x 2^23 rounds x to
 * j in the sum's low mantissa bits, from which 2^j is built as a float; 2^f is the cubic above.
 * x is held at -126 or above, so 2^j stays a normal number: results below 2^-126 come out as
 * 2^-126 (a masked key's -inf must not come here), and a NaN stays a NaN (the hold keeps it, and
 * 2^j multiplies it). Nine instructions in sm_90a SASS (FMNMX.NAN, 3 FADD, 3 FFMA, LEA, FMUL). */
SY_DEV float sy_exp2_fma(float x)
{
    x = x < -126.0f ? -126.0f : x;
    const float round_bias = 12582912.0f; /* 1.5 x 2^23 */
    const float biased = x + round_bias;
    const float f = x - (biased - round_bias);
    float p = fmaf(SY_EXP2_FMA_C3, f, SY_EXP2_FMA_C2);
    p = fmaf(p, f, SY_EXP2_FMA_C1);
    p = fmaf(p, f, SY_EXP2_FMA_C0);
    /* j's two's complement sits in biased's low bits: shifted into the exponent field and added to
     * 1.0's, it is 2^j */
    return p * sy_f32_from_bits((sy_f32_bits(biased) << 23) + 0x3F800000u);
}

#endif
