/* bf16 tensor-core products on NVIDIA GPUs (mma.sync m16n8k16, f32 accumulate; sm_80 and newer,
 * which cmake/gpu.cmake requires of SY_CUDA_ARCHS), shared by the CUDA-only kernels. HIP builds
 * never include this: their matrix cores need their own fragment layouts.
 *
 * Fragments (PTX ISA, "Matrix fragments for mma.m16n8k16" with .bf16), lane = 4g + c:
 *   A (16 x 16, row-major): register 0 row g, columns 2c, 2c+1; 1 row g+8, the same columns;
 *                           2 row g, columns 2c+8, 2c+9; 3 row g+8, columns 2c+8, 2c+9
 *   B (16 x 8, column-major): register 0 k-rows 2c, 2c+1 of column g; 1 k-rows 2c+8, 2c+9
 *   C (16 x 8, f32): 0, 1 row g, columns 2c, 2c+1; 2, 3 row g+8, columns 2c, 2c+1
 * A register holds two bf16, the lower column (or k) in its low half.
 *
 * f32 operands keep about f32 accuracy as two bf16 parts, x = hi + lo with hi = bf16(x) and
 * lo = bf16(x - hi) (x - hi is exact in f32): two products, leaving about 2^-17 of x out. */
#ifndef SY_MMA_BF16_CUDA_CUH
#define SY_MMA_BF16_CUDA_CUH

#include <stdint.h>

#include "sy_numeric.h"

/* d += a b over one 16 x 8 x 16 tile. */
static __device__ __forceinline__ void sy_mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)d, (void)a, (void)b0, (void)b1;
    __trap(); /* the build refuses architectures below sm_80 (cmake/gpu.cmake) */
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
#else
    (void)r, (void)row;
    __trap();
#endif
}

/* bf16(lo) | bf16(hi) << 16, rounded to nearest even: sy_f32_to_bf16 of each for finite values, in
 * one instruction. */
static __device__ __forceinline__ uint32_t sy_mma_pack_bf16x2(float lo, float hi)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    (void)lo, (void)hi;
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
