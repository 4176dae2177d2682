/* bf16 and f16 tensor-core products on NVIDIA GPUs (mma.sync m16n8k16, f32 accumulate; sm_80 and newer,
 * which cmake/gpu.cmake requires of SY_CUDA_ARCHS), shared by the CUDA-only kernels. HIP builds
 * never include this: their matrix cores need their own fragment layouts. tests/gpu's CPU emulator
 * (SY_EMU_TENSOR_CORES) supplies emulated instructions of the same layouts.
 *
 * Fragments (PTX ISA, "Matrix fragments for mma.m16n8k16" with .bf16), lane = 4g + c:
 *   A (16 x 16, row-major): register 0 row g, columns 2c, 2c+1; 1 row g+8, the same columns;
 *                           2 row g, columns 2c+8, 2c+9; 3 row g+8, columns 2c+8, 2c+9
 *   B (16 x 8, column-major): register 0 k-rows 2c, 2c+1 of column g; 1 k-rows 2c+8, 2c+9
 *   C (16 x 8, f32): 0, 1 row g, columns 2c, 2c+1; 2, 3 row g+8, columns 2c, 2c+1
 * A register holds two bf16 (or two f16), the lower column (or k) in its low half.
 *
 * f32 operands keep about f32 accuracy as two bf16 parts, x = hi + lo with hi = bf16(x) and
 * lo = bf16(x - hi) (x - hi is exact in f32): two products, leaving about 2^-17 of x out. */
#ifndef SY_MMA_BF16_CUDA_CUH
#define SY_MMA_BF16_CUDA_CUH

#include <stdint.h>

#include "sy_numeric.h"

/* d += a b over one 16 x 8 x 16 tile, of f16 operands (F16) or bf16 ones. */
template <bool F16>
static __device__ __forceinline__ void sy_mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define SY_MMA_16816(type)                                                                                        \
    asm("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "  \
        "{%0,%1,%2,%3};\n"                                                                                       \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                                        \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
    if constexpr (F16)
        SY_MMA_16816("f16");
    else
        SY_MMA_16816("bf16");
#undef SY_MMA_16816
#elif defined(SY_EMU_TENSOR_CORES)
    if constexpr (F16)
        sy_emu_mma_f16(d, a, b0, b1);
    else
        sy_emu_mma_bf16(d, a, b0, b1);
#else
    (void)d, (void)a, (void)b0, (void)b1;
    __trap(); /* the build refuses architectures below sm_80 (cmake/gpu.cmake) */
#endif
}

static __device__ __forceinline__ void sy_mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    sy_mma_16816<false>(d, a, b0, b1);
}

static __device__ __forceinline__ void sy_mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    sy_mma_16816<true>(d, a, b0, b1);
}

/* The two e4m3 codes in the low 16 bits of `two` (the first in the low byte) as an f16 pair of the
 * same values: exact, since every e4m3 value is an f16, and NaN stays NaN. sm_89 and newer convert
 * in one instruction; sm_80 moves the bits into f16's places (the value times 2^-8, e4m3's
 * subnormals landing on f16's) and multiplies by 2^8, fixing the NaN code 0x7F by hand. */
static __device__ __forceinline__ uint32_t sy_e4m3x2_to_f16x2(uint32_t two)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    uint32_t r;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"((unsigned short)two));
    return r;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t halves = __byte_perm(two, 0u, 0x7170u); /* 0x00b1_00b0 */
    const uint32_t mag = halves & 0x007F007Fu;
    uint32_t r = mag << 7 | (halves & 0x00800080u) << 8, scaled;
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(scaled) : "r"(r), "r"(0x5C005C00u)); /* x 256 */
    return scaled | (__vcmpeq2(mag, 0x007F007Fu) & 0x7E007E00u);
#elif defined(SY_EMU_TENSOR_CORES)
    return (uint32_t)sy_emu_f32_to_f16(sy_fp8e4m3_to_f32((uint8_t)(two & 0xFFu))) |
           (uint32_t)sy_emu_f32_to_f16(sy_fp8e4m3_to_f32((uint8_t)(two >> 8 & 0xFFu))) << 16;
#else
    (void)two;
    __trap();
    return 0u;
#endif
}

/* Zeroes an array of accumulator tiles. */
template <int A, int B>
static __device__ __forceinline__ void sy_mma_zero(float (&acc)[A][B][4])
{
#pragma unroll
    for (int i = 0; i < A; i++)
#pragma unroll
        for (int j = 0; j < B; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[i][j][r] = 0.0f;
}

/* Four 8 x 8 matrices of 16-bit elements from shared memory (ldmatrix .x4): lanes 8i .. 8i+7 give
 * the addresses of matrix i's 8 rows (16 bytes each), and matrix i lands in r[i] as mma fragments
 * do: lane 4g + c holds row g, elements 2c and 2c+1. TRANS: lane 4g + c holds rows 2c and 2c+1 of
 * element g instead (a [key][dim] tile read as the k-major B of a product over keys). */
template <bool TRANS>
static __device__ __forceinline__ void sy_ldmatrix_x4(uint32_t (&r)[4], const void *row)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    /* volatile: the asm reads shared memory the compiler cannot see, so it must stay between the
     * barriers around it (a plain asm counts as a pure function of the address). */
    const unsigned a = (unsigned)__cvta_generic_to_shared(row);
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
#elif defined(SY_EMU_TENSOR_CORES)
    sy_emu_ldmatrix_x4(r, row, TRANS);
#else
    (void)r, (void)row;
    __trap();
#endif
}

/* bf16(lo) | bf16(hi) << 16 (or f16, F16), rounded to nearest even: for bf16, sy_f32_to_bf16 of each
 * for finite values, in one instruction. */
template <bool F16>
static __device__ __forceinline__ uint32_t sy_mma_pack_16x2(float lo, float hi)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t r;
    if constexpr (F16)
        asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#elif defined(SY_EMU_TENSOR_CORES)
    if constexpr (F16)
        return (uint32_t)sy_emu_f32_to_f16(lo) | (uint32_t)sy_emu_f32_to_f16(hi) << 16;
    else
        return (uint32_t)sy_f32_to_bf16(lo) | (uint32_t)sy_f32_to_bf16(hi) << 16;
#else
    (void)lo, (void)hi;
    __trap();
    return 0u;
#endif
}

static __device__ __forceinline__ uint32_t sy_mma_pack_bf16x2(float lo, float hi)
{
    return sy_mma_pack_16x2<false>(lo, hi);
}

static __device__ __forceinline__ uint32_t sy_mma_pack_f16x2(float lo, float hi)
{
    return sy_mma_pack_16x2<true>(lo, hi);
}

/* a * b of two bf16 pairs, each half rounded once to nearest even; subnormals taken and given as
 * they are (bf16 arithmetic has no flush-to-zero). */
static __device__ __forceinline__ uint32_t sy_bf16x2_mul(uint32_t a, uint32_t b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t r;
    /* + -0 keeps a product of -0 (sm_80 has no bf16x2 multiply of its own) */
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(0x80008000u));
    return r;
#elif defined(SY_EMU_TENSOR_CORES)
    /* the f32 product of two bf16 values is exact, so one rounding to bf16 remains */
    return sy_mma_pack_bf16x2(sy_bf16_to_f32((uint16_t)a) * sy_bf16_to_f32((uint16_t)b),
                              sy_bf16_to_f32((uint16_t)(a >> 16)) * sy_bf16_to_f32((uint16_t)(b >> 16)));
#else
    (void)a, (void)b;
    __trap();
    return 0u;
#endif
}

/* x as the bits of its high bf16 part and of the bf16 of the remainder: an f32 input of a bf16
 * product goes in as these two planes (two products), which keeps it within f32 rounding. */
static __device__ __forceinline__ void sy_mma_split_bf16_one(float x, uint16_t *hi, uint16_t *lo)
{
    const float h = sy_round_bf16(x);
    *hi = sy_f32_to_bf16(h);
    *lo = sy_f32_to_bf16(x - h);
}

/* The pair (x0, x1) as its high bf16 parts and the bf16 of the remainders (x0 in the low halves). */
static __device__ __forceinline__ void sy_mma_split_bf16(float x0, float x1, uint32_t *hi, uint32_t *lo)
{
    uint16_t h0, h1, l0, l1;
    sy_mma_split_bf16_one(x0, &h0, &l0);
    sy_mma_split_bf16_one(x1, &h1, &l1);
    *hi = (uint32_t)h0 | (uint32_t)h1 << 16;
    *lo = (uint32_t)l0 | (uint32_t)l1 << 16;
}

#endif
