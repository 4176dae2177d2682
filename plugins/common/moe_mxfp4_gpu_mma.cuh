/* The grouped expert product of the MXFP4 MoE forward on NVIDIA tensor cores (mma.sync
 * m16n8k16, bf16 in, f32 accumulate; sm_80 and newer). Included by moe_mxfp4_gpu.cuh for CUDA
 * builds; the HIP build keeps the CUDA-core product there (its matrix cores need their own
 * fragment layout, not written yet).
 *
 * Work split. A CTA takes one chunk (an expert and up to MOE_MMA_TOKENS of its routed pairs) and
 * a slice of output rows: for w13, 64 intermediate indices (each warp the gate and the up tile of
 * 16 indices, so SwiGLU is applied in registers); for w2, 128 hidden rows (32 per warp). The
 * weights of an expert are read once per chunk, which at decode sizes is once per step: 128 tokens
 * top-4 of 128 experts give about 4 pairs an expert, and a chunk holds 16. Calls whose experts
 * average MOE_MMA_WIDE_AVERAGE pairs or more (prefill sizes) run the wide kernel instead, chunks of
 * up to 64 pairs, so that one decode of the weights serves up to 64 tokens (the ring and the
 * accumulators of 8 n-tiles leave 2 CTAs an SM). H200, 8192 tokens (four passes of 8192 pairs):
 * 14.8 ms with chunks of 16, 12.0 ms wide (11.1 ms once the inputs came in pair order).
 *
 * Warpgroup product (WG). Where the device is sm_90 and the build has sm_90a code
 * (sy_wgmma_runs_on), wide calls run on wgmma instead: the m-tile mt of a warpgroup's four warps
 * is one 64-row A, decoded into registers exactly as for mma.sync, and the stage's 64 input rows
 * are B in shared memory (128-byte swizzled, K-major), one m64n64k16 product a k-step and plane
 * where mma.sync takes eight. Its CTA is three warpgroups sharing each stage's inputs (384 weight
 * rows, one CTA an SM at 165 registers, moe_mma_cta): every CTA reads the chunk's input rows from
 * L2 once per stage, and with three warps a scheduler the decode's latencies hide better. The inputs go in sy_e2m1_warpgroup_slot's order, which puts a k-step's 16 columns
 * where wgmma reads them; the products accumulate in place from block to block (below), in the
 * mma.sync product's order, and on an H100 the two products' outputs were equal bit for bit.
 * Every chunk runs as 64 columns (rows past its pairs are zeros). 8192 tokens: H200 11.3-11.6 ->
 * 9.6-10.0 ms with each block's products in partials that an f32 FMA a sum scaled into the
 * accumulators; H100 8.66-8.82 -> 7.92-8.01 ms (act entering w2 as bf16 in both) once the scales
 * were folded into the weights: w13 612 M -> 465 M instructions, 1.41 -> 1.35 ms, each warp
 * issuing every 5.5 cycles with two a scheduler (latency-bound); three warpgroups a CTA instead of
 * two, 7.95-8.11 -> 6.72-6.79 ms (w13 1.37 -> 1.03 ms, its issue slots 36% -> 45% busy, the tensor
 * pipe 32% -> 39% of cycles; ncu, H100).
 *
 * Pipeline. Decode reads far more weight bytes than it multiplies, so the CTA keeps a ring of
 * stages of 4 MXFP4 blocks in flight with cp.async (weights, scales and the input rows) while it
 * multiplies the oldest one; the bytes in flight per SM, not the tensor cores, set the speed. The
 * ring fills a fixed MOE_MMA_RING_BYTES, so a stage's size decides how many there are
 * (moe_mma_stage): a chunk of up to 8 pairs with one input plane stages 12.5 KB and gets three,
 * where 16 pairs of two planes (20 KB) get two; 5 CTAs an SM (at most 96 registers, a few bytes
 * of spills for the two-plane shapes). Measured at 128 tokens on an H200: with e2m1 decoded
 * through a table in shared memory, four stages of 2 CTAs 1.25 ms, two stages of 4 CTAs 0.97 ms,
 * 16 table copies 0.85 ms (ncu: the shared-memory pipe 89% busy, half its wavefronts bank
 * conflicts of the table); one m-tile of each warp on the table and one on bit moves 0.83 ms; bit
 * moves alone (with a multiply a pair then) 0.75 ms with 4 CTAs an SM, 0.74 ms with 5, 0.77 ms with a 50 KB
 * ring (three stages for w2's two-plane input, four for w13) and 4 CTAs. ncu then had both products
 * issue-bound (0.8 instructions a cycle a scheduler, DRAM 53%), a quarter of the instructions
 * converting block scales, each four times over (once a lane of a row) and with branches for the
 * special bytes: converted once a stage a warp (moe_mma_stage_scales, branch-free), 0.63 ms.
 *
 * Fragments as in mma_bf16_cuda.cuh (weight rows are A's rows, tokens B's columns). A dot product
 * does not care which k sits in which fragment column as long as A and B agree, so within one
 * MXFP4 block (32 k, 16 bytes a row) lane c takes bytes 4c .. 4c+3 of its two rows, k = 8c ..
 * 8c+7, as one word of 8 codes, which the prepare wrote in the tensor-core code order
 * (sy_e2m1x8_to_pair_order) and sy_e2m1x8_to_bf16_pairs_tiny turns into the bf16 pairs of k (0, 4),
 * (1, 5), (2, 6), (3, 7) (offsets from 8c); step s (0, 1) maps columns {2c, 2c+1} to the pair
 * 2s and {2c+8, 2c+9} to the pair 2s+1. The inputs are written in that order (sy_e2m1_pair_slot:
 * x by moe_gpu_stage_kernel, act by w13's epilogue), so the lane's B registers are one 16-byte
 * read of the staged input (k = 8c .. 8c+7) as it is.
 *
 * Exactness. The bit moves of sy_e2m1x8_to_bf16_pairs_tiny spell each E2M1 value times 2^-126
 * exactly (the code 0.5 as a bf16 subnormal), and one bf16 multiply a pair of them
 * (moe_mma_block_multiplier, sy_bf16x2_mul) takes a block to its values times 2^(s - top), s its
 * E8M0 scale and top its row's largest (sy_moe_row_top, a section of the prepared buffer): exact
 * for every block within 2^-132 of its row's top, and a power of two that only moves the
 * exponent, so A holds the row's true weights times 2^(127 - top). The inputs go into B times
 * 2^(MOE_MMA_INPUT_EXP - e), where 2^e is the first power of two above their row's largest finite
 * magnitude: below 2^96, so that the sums over any K under 2^28 stay finite, and exact for every
 * element within 2^-222 of its row's largest. The products are the true ones times powers of two,
 * the tensor cores sum all of a row's blocks in f32, and the epilogue scales each sum back by
 * 2^(top - 127 + e - MOE_MMA_INPUT_EXP). With the scales applied in f32 to each block's partial
 * sum instead (the build before), the FMA a sum and block was as many instructions as the decode
 * and the products' issue together; folded, the accumulators are the wgmma's own, and a block's
 * products run while the next block is decoded. The sums are those of the true products up to
 * powers of two, rounded in the tensor cores' order, so the decode step's greedy tokens may differ
 * from a build that sums otherwise. Both kernels take the same operands in the same order, so a
 * token's output does not depend on which one its call ran. Rows are staged by
 * moe_gpu_stage_kernel (x; act where the SwiGLU has no bound) or, for act under the clamp's bound
 * 2^act_exp, by w13's epilogue with that fixed exponent. bf16 inputs take one plane, exact, and
 * with bf16 x act enters w2 as one bf16 plane too (rounded once, as the reference rounds it); f32
 * inputs (an f32 x, and act with it) take two bf16 planes, the high parts and the bf16 of the
 * remainders (mma_bf16_cuda.cuh): two products per step and no conversion inside the product,
 * where every warp would repeat it for the same inputs. Every output is a function of its own
 * pair's input row and the expert's weights: the chunk it shares, its column in the chunk and the
 * tile layout (only the addresses differ) never reach the arithmetic,
 * so repeated runs and the two plugins agree bit for bit. */
#ifndef SY_MOE_MXFP4_GPU_MMA_CUH
#define SY_MOE_MXFP4_GPU_MMA_CUH

#include "cp_async_cuda.cuh"
#include "mxfp4_bf16_pairs.h"
#include "mma_bf16_cuda.cuh"
#include "wgmma_bf16_cuda.cuh"

enum {
    MOE_MMA_LANES = 32, /* mma.sync fragments are defined over 32 lanes: NVIDIA only */
    MOE_MMA_N = 8,                             /* tokens of one mma */
    MOE_MMA_TOKENS = 16,                       /* pairs of one chunk: up to 2 n-tiles */
    MOE_MMA_WIDE_TOKENS = 64,                  /* pairs of one chunk of the wide kernel: up to 8 n-tiles */
    MOE_MMA_WIDE_AVERAGE = 48,                 /* routed pairs an expert from which a call runs the wide kernel */
    MOE_MMA_STAGE_BLOCKS = 4,                  /* MXFP4 blocks of K a pipeline stage holds */
    MOE_MMA_TILE_STAGE_BYTES = MOE_MMA_STAGE_BLOCKS * 16 * SY_MXFP4_BLOCK_BYTES, /* 1 KB, contiguous in a tile */
    MOE_MMA_SCALE_SEGMENT = 256,               /* scale bytes of 32 rows x 8 blocks, contiguous (sy_moe_scale_offset) */
    MOE_MMA_X_ROW = MOE_MMA_STAGE_BLOCKS * SY_MXFP4_BLOCK * 2 + 64, /* bf16: 320 bytes, 64 off a 128-byte multiple */
    /* The warpgroup product's staged row: two 128-byte swizzled rows (64 k each), no padding. */
    MOE_MMA_WG_X_ROW = MOE_MMA_STAGE_BLOCKS * SY_MXFP4_BLOCK * 2,
    MOE_MMA_WG_ALIGN_SLACK = 1024, /* dynamic shared memory is only 16-byte aligned; swizzled tiles need 1024 */
    /* Two stages of the largest chunk shape (20 KB). */
    MOE_MMA_RING_BYTES = 40 * 1024,
    /* The wide kernel's: two stages of 64 pairs of two planes (50 KB), three of one plane; 2 CTAs an SM. */
    MOE_MMA_WIDE_RING_BYTES = 100 * 1024,
    /* The warpgroup product's (one CTA an SM): three stages of two planes (62 KB), four of one. */
    MOE_MMA_WG_RING_BYTES = 208 * 1024,
    /* Each column's exponent to scale its sums back by, one int a pair of the chunk. */
    MOE_MMA_COL_EXP_BYTES = MOE_MMA_WIDE_TOKENS * 4,
    /* Input rows are staged times 2^(MOE_MMA_INPUT_EXP - e), below 2^96 ("Exactness"). */
    MOE_MMA_INPUT_EXP = 96
};

static_assert(MOE_MMA_TOKENS % MOE_MMA_N == 0 && MOE_MMA_WIDE_TOKENS % MOE_MMA_N == 0, "whole n-tiles per chunk");
static_assert(MOE_MMA_STAGE_BLOCKS * 2 == 8, "a stage is half of a scale segment's 8 blocks");

/* A CTA's warps and what follows from them: 4 warps for the mma.sync products; 12 (three
 * warpgroups sharing each stage's inputs) for the warpgroup product, so that each input row read
 * from L2 serves 384 weight rows rather than 128 and three warps a scheduler hide each other's
 * latencies (two warpgroups: 18% slower at 8192 tokens). Each warp owns two 16-row tiles (w13: the gate and the up tile of 16
 * intermediate indices; w2: 32 hidden rows). */
template <bool WG>
struct moe_mma_cta {
    static constexpr int warps = WG ? 12 : 4;
    static constexpr int threads = MOE_MMA_LANES * warps;
    static constexpr int tiles = 2 * warps;
    static constexpr int w_bytes = tiles * MOE_MMA_TILE_STAGE_BYTES; /* a stage's weights */
    static constexpr int s_bytes = tiles * MOE_MMA_SCALE_SEGMENT;    /* and their scales */
    /* a stage's block multipliers of each warp, one uint4 a lane (moe_mma_stage_multipliers) */
    static constexpr int multiplier_bytes = threads * 16;
    static constexpr int w13_indices = 16 * warps; /* intermediate indices per w13 CTA */
    static constexpr int w2_rows = 32 * warps;     /* hidden rows per w2 CTA */
    static constexpr int ring = WG ? MOE_MMA_WG_RING_BYTES : MOE_MMA_WIDE_RING_BYTES;
    static constexpr int align_slack = WG ? MOE_MMA_WG_ALIGN_SLACK : 0;
    /* shared memory of a wide (or warpgroup) CTA; the narrow one's ring is MOE_MMA_RING_BYTES */
    static constexpr int smem_bytes(int ring_bytes)
    {
        return ring_bytes + multiplier_bytes + MOE_MMA_COL_EXP_BYTES + align_slack;
    }
    static_assert(w_bytes == 4 * 16 * threads, "four 16-byte weight copies per thread a stage");
    static_assert(s_bytes == 16 * threads, "one 16-byte scale copy per thread a stage");
};

/* One ring stage of a chunk of NT n-tiles: weights, scales, then the PLANES ? 2 : 1 planes (high
 * parts, low parts) of NT * 8 input rows; as many as fit a ring of RING bytes. WG: the warpgroup
 * product's planes, each two 128-byte-swizzled tiles of NT * 8 rows (k 0 .. 63 and 64 .. 127 of the
 * stage), as wgmma reads its K-major B; otherwise rows of MOE_MMA_X_ROW bytes. */
template <int NT, bool PLANES, int RING, bool WG = false>
struct moe_mma_stage {
    using cta = moe_mma_cta<WG>;
    static constexpr int x_tile = NT * MOE_MMA_N * 128; /* WG: one swizzled tile of 64 k */
    static constexpr int x_plane = NT * MOE_MMA_N * (WG ? MOE_MMA_WG_X_ROW : MOE_MMA_X_ROW);
    static constexpr int x_offset = cta::w_bytes + cta::s_bytes; /* the input planes' */
    static constexpr int bytes = x_offset + (PLANES ? 2 : 1) * x_plane;
    static constexpr int count = RING / bytes;
    /* each thread copies one 16-byte column (of 16) of up to x_rows of each plane's NT * 8 rows */
    static constexpr int x_rows = (NT * MOE_MMA_N + cta::threads / 16 - 1) / (cta::threads / 16);
    static_assert(count >= 2, "one stage loading while one is multiplied");
    static_assert(bytes % 128 == 0, "every stage starts as aligned as the ring");
    static_assert(x_rows * (cta::threads / 16) >= NT * MOE_MMA_N, "every row copied");
    static_assert(!WG || (bytes % 1024 == 0 && x_offset % 1024 == 0), "every swizzled tile on a 1024-byte boundary");
};

/* Tile t of a CTA of output slice `slice` in tile-order rows: w13 warp t/2's gate (even t) or up
 * (odd t) tile of intermediate indices i0 .. i0+15; w2 hidden rows r0 + 16 t. A slice may reach past
 * the padded rows (its CTA's rows are not a divisor of them): such tiles read the last padded tile
 * instead, so that every copy stays inside the matrix; their sums are never stored. */
template <bool W13, bool WG>
static __device__ __forceinline__ uint32_t moe_mma_tile_row(const moe_gpu_gemm &a, uint32_t slice, int t)
{
    using cta = moe_mma_cta<WG>;
    if (W13) {
        const uint32_t i0 = slice * cta::w13_indices + (uint32_t)(t / 2) * 16u;
        return sy_moe_w13_tile_row(a.gate_up_layout,
                                   (uint32_t)(t % 2) * a.inter_padded + (i0 < a.inter_padded ? i0 : a.inter_padded - 16u),
                                   a.inter_padded);
    }
    const uint32_t r0 = slice * cta::w2_rows + 16u * (uint32_t)t;
    return r0 < (uint32_t)a.m.expert_bias ? r0 : (uint32_t)a.m.expert_bias - 16u;
}

/* This thread's share of every pipeline stage, as addresses of stage 0: four 16-byte pieces of
 * weights (tiles tid/64 + i threads/64), one of scales (tile tid/16) and one 16-byte column of
 * each of XR staged input rows (rows tid/16 + i threads/16). Kept per thread so that no array is
 * indexed by a thread-dependent value. */
template <int XR>
struct moe_mma_sources {
    const uint8_t *w[4];
    const uint8_t *scale;
    const char *x_row[XR]; /* NULL: that row is zeros */
    uint32_t x_column;
};

/* Issues the copies of stage `st` (blocks 4 st .. 4 st + 3) into ring slot `slot`: the weights, the
 * scales and each staged row's bf16 parts (PLANES: the high plane and the low plane). */
template <int NT, bool PLANES, int RING, bool WG>
static __device__ __forceinline__ void moe_mma_issue(const moe_gpu_gemm &a,
                                                     const moe_mma_sources<moe_mma_stage<NT, PLANES, RING, WG>::x_rows> &src,
                                                     uint32_t st, uint8_t *slot)
{
    using stage = moe_mma_stage<NT, PLANES, RING, WG>;
    using cta = moe_mma_cta<WG>;
    constexpr int XR = stage::x_rows;
    const int tid = (int)threadIdx.x;
    const uint32_t j0 = st * MOE_MMA_STAGE_BLOCKS;
#pragma unroll
    for (int i = 0; i < 4; i++)
        sy_cp_async16(slot + (tid / 64 + cta::threads / 64 * i) * MOE_MMA_TILE_STAGE_BYTES + (tid % 64) * 16,
                      src.w[i] + (size_t)j0 * 16u * SY_MXFP4_BLOCK_BYTES, 16);
    /* A stage is half of a scale segment: both halves copy the whole segment of their octet. */
    sy_cp_async16(slot + cta::w_bytes + (tid / 16) * MOE_MMA_SCALE_SEGMENT + (tid % 16) * 16,
                  src.scale + (size_t)(j0 / 8u) * MOE_MMA_SCALE_SEGMENT, 16);
    uint8_t *xs = slot + stage::x_offset;
    const uint32_t k_used = a.m.kblocks_used * SY_MXFP4_BLOCK, k = j0 * SY_MXFP4_BLOCK + src.x_column * 8u;
#pragma unroll
    for (int i = 0; i < (PLANES ? 2 : 1) * XR; i++) {
        const int row = tid / 16 + cta::threads / 16 * (i % XR), plane = i / XR;
        if ((NT * MOE_MMA_N) % (cta::threads / 16) != 0 && row >= NT * MOE_MMA_N)
            continue;
        uint8_t *dst = xs + plane * stage::x_plane +
                       (WG ? (src.x_column / 8u) * stage::x_tile + sy_wgmma_sw128_offset(row, (int)(src.x_column % 8u))
                           : row * MOE_MMA_X_ROW + src.x_column * 16u);
        const char *row_src = src.x_row[i % XR];
        const bool have = row_src && k < k_used;
        sy_cp_async16(dst, have ? row_src + plane * a.in_lo_offset + (size_t)k * 2u : (const char *)a.in,
                      have ? 16 : 0);
    }
}

/* bf16 2^(scale - top + 126) in both halves, the factor that takes a block's decoded weights (its
 * E2M1 values times 2^-126) to their values times 2^(scale - 127) / 2^(top - 127): scale <= top, so
 * the exponent runs from -128 (a bf16 subnormal) to 126. The NaN byte 0xFF gives NaN, which every
 * product of the block then carries, as the reference's NaN scale does. */
static __device__ __forceinline__ uint32_t moe_mma_block_multiplier(uint32_t scale, int top)
{
    const int p = (int)scale - top + 126;
    uint32_t bits = p >= -126 ? (uint32_t)(p + 127) << 7 : 0x40u >> (-127 - p);
    bits = scale == 0xFFu ? 0x7FC0u : bits;
    return bits | bits << 16;
}

/* The block multipliers (moe_mma_block_multiplier) of the warp's stage, written to the warp's 32
 * uint4 of `out`: lane 4g + c makes those of block c of the stage, for rows g and g + 8 of its two
 * tiles (x, y: tile 0; z, w: tile 1), so that each scale byte is converted once a warp and a block's
 * four multipliers are one 16-byte read of lane 4g + jj. Converting per block where the scale is
 * used cost each of the 4 lanes of a row the same conversions, a quarter of the product's
 * instructions. row_top: the lane's rows' tops, [tile][g, g + 8]. */
template <bool WG>
static __device__ __forceinline__ void moe_mma_stage_multipliers(const uint8_t *slot, uint32_t st,
                                                                 const uint32_t (&tile_np)[2], const int (&row_top)[2][2],
                                                                 uint4 *out)
{
    const int lane = (int)threadIdx.x % MOE_MMA_LANES, warp = (int)threadIdx.x / MOE_MMA_LANES;
    const uint32_t g = (uint32_t)lane / 4u, c = (uint32_t)lane % 4u;
    /* sy_moe_scale_offset inside a tile's staged segment: block j = 4 st + c (kl = c, kp = st % 2),
     * row q = g (+8). */
    uint32_t v[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; mt++) {
        const uint8_t *ss = slot + moe_mma_cta<WG>::w_bytes + (warp * 2 + mt) * MOE_MMA_SCALE_SEGMENT;
#pragma unroll
        for (int h = 0; h < 2; h++)
            v[mt][h] = moe_mma_block_multiplier(ss[((c * 16u + g + 8u * (uint32_t)h) * 2u + st % 2u) * 2u + tile_np[mt]],
                                                row_top[mt][h]);
    }
    out[lane] = make_uint4(v[0][0], v[0][1], v[1][0], v[1][1]);
}

/* The A fragments of both k-steps of block jj of the warp's tile t in ring slot `slot`: rows g and
 * g + 8 of the block's e2m1 codes as bf16 pairs, word c of each (the file's comment), times the
 * rows' block multipliers mul_g and mul_g8 (one bf16x2 multiply a word, exact: powers of two). */
static __device__ __forceinline__ void moe_mma_decode_tile(const uint8_t *slot, int t, int jj, uint32_t mul_g,
                                                           uint32_t mul_g8, uint32_t (&frag)[2][4])
{
    const int lane = (int)threadIdx.x % MOE_MMA_LANES, g = lane / 4, c = lane % 4;
    const uint8_t *ws = slot + t * MOE_MMA_TILE_STAGE_BYTES + jj * 16 * SY_MXFP4_BLOCK_BYTES + 4 * c;
    const uint32_t row_g = *(const uint32_t *)(ws + g * SY_MXFP4_BLOCK_BYTES);
    const uint32_t row_g8 = *(const uint32_t *)(ws + (g + 8) * SY_MXFP4_BLOCK_BYTES);
    uint32_t rg[4], rg8[4];
    sy_e2m1x8_to_bf16_pairs_tiny(row_g, rg);
    sy_e2m1x8_to_bf16_pairs_tiny(row_g8, rg8);
#pragma unroll
    for (int s = 0; s < 2; s++) {
        frag[s][0] = sy_bf16x2_mul(rg[2 * s], mul_g);
        frag[s][1] = sy_bf16x2_mul(rg8[2 * s], mul_g8);
        frag[s][2] = sy_bf16x2_mul(rg[2 * s + 1], mul_g);
        frag[s][3] = sy_bf16x2_mul(rg8[2 * s + 1], mul_g8);
    }
}

/* Both of the warp's tiles of block jj, decoded and multiplied (moe_mma_decode_tile). */
static __device__ __forceinline__ void moe_mma_decode_block(const uint8_t *slot, int jj, const uint4 &mul,
                                                            uint32_t (&frag)[2][2][4])
{
    const int warp = (int)threadIdx.x / MOE_MMA_LANES;
    moe_mma_decode_tile(slot, warp * 2, jj, mul.x, mul.y, frag[0]);
    moe_mma_decode_tile(slot, warp * 2 + 1, jj, mul.z, mul.w, frag[1]);
}

/* The products of one landed stage in ring slot `slot` (stage st; blocks past kb skipped), added to
 * the warp's accumulators: per block, its weights decoded with the block's scale folded in, then
 * each tile's bf16 products over the block's 32 k, straight into the accumulators, k-step by
 * k-step (per k-step the high plane, then the low): the warpgroup product's order, so that every
 * accumulator sees the same products in the same order whatever the chunk's size. */
template <int NT, bool PLANES, int RING>
static __device__ __forceinline__ void moe_mma_multiply_stage(const uint8_t *slot, uint32_t st, uint32_t kb,
                                                              const uint32_t (&tile_np)[2], const int (&row_top)[2][2],
                                                              uint4 *warp_multipliers, float (&acc)[2][NT][4])
{
    using stage = moe_mma_stage<NT, PLANES, RING>;
    const int lane = (int)threadIdx.x % MOE_MMA_LANES;
    const int g = lane / 4, c = lane % 4;
    const uint8_t *xs = slot + stage::x_offset;
    /* The block barrier before this ordered the warp's reads of the previous stage's multipliers first. */
    moe_mma_stage_multipliers<false>(slot, st, tile_np, row_top, warp_multipliers);
    __syncwarp();
    const auto block = [&](int jj) {
        /* A of k-step s of each m-tile: rows g, g + 8 of the block's weights as bf16 pairs */
        uint32_t frag[2][2][4];
        moe_mma_decode_block(slot, jj, warp_multipliers[4 * g + jj], frag);
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            /* B: k = 8c .. 8c+7 of block jj for tokens nt*8 + g, staged in sy_e2m1x8_to_bf16_pairs_tiny's
             * order: the high parts and (PLANES) the low. */
            const uint8_t *xr = xs + (nt * MOE_MMA_N + g) * MOE_MMA_X_ROW + (jj * SY_MXFP4_BLOCK + 8 * c) * 2;
            const uint4 bh = *(const uint4 *)xr;
            uint4 bl = bh;
            if (PLANES)
                bl = *(const uint4 *)(xr + stage::x_plane);
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int s = 0; s < 2; s++) {
                    sy_mma_bf16(acc[mt][nt], frag[mt][s], s ? bh.z : bh.x, s ? bh.w : bh.y);
                    if (PLANES)
                        sy_mma_bf16(acc[mt][nt], frag[mt][s], s ? bl.z : bl.x, s ? bl.w : bl.y);
                }
        }
    };
    /* Wide bodies are long enough without unrolling the blocks: unrolled, the kernel's four bodies
     * overflowed the instruction cache (ncu at 8192 tokens: 37% of w13's stall samples "no
     * instruction"). */
#pragma unroll(NT > 2 ? 1 : MOE_MMA_STAGE_BLOCKS)
    for (int jj = 0; jj < MOE_MMA_STAGE_BLOCKS; jj++)
        if (st * MOE_MMA_STAGE_BLOCKS + (uint32_t)jj < kb)
            block(jj);
}

/* moe_mma_multiply_stage on Hopper's warpgroup products, for a chunk of NT n-tiles: the m-tile mt
 * of the four warps is one 64-row A (each warp's rows in registers, decoded and multiplied as the
 * mma.sync product does), the stage's swizzled input tiles B, and one m64nNk16 product (N = 8 NT)
 * a k-step and plane replaces NT m16n8k16, in the mma.sync product's order, with the inputs staged
 * in sy_e2m1_warpgroup_slot's order, which puts each k-step's 16 columns where wgmma reads them.
 * The products accumulate in place, so a block's products run while the next block is decoded
 * into the other half of a double-buffered A; the stage's last ones are waited for before the
 * barrier that lets its ring slot be refilled. */
template <int NT, bool PLANES, int RING>
static __device__ __forceinline__ void moe_mma_multiply_stage_wg(const uint8_t *slot, uint32_t st, uint32_t kb,
                                                                 const uint32_t (&tile_np)[2], const int (&row_top)[2][2],
                                                                 uint4 *warp_multipliers, float (&acc)[2][NT][4])
{
    using stage = moe_mma_stage<NT, PLANES, RING, true>;
    constexpr int N = NT * MOE_MMA_N;
    const int g = (int)threadIdx.x % MOE_MMA_LANES / 4;
    const uint64_t x_desc = sy_wgmma_desc_sw128(slot + stage::x_offset);
    moe_mma_stage_multipliers<true>(slot, st, tile_np, row_top, warp_multipliers);
    __syncwarp();
    const uint32_t left = kb - st * MOE_MMA_STAGE_BLOCKS;
    const int blocks = left < (uint32_t)MOE_MMA_STAGE_BLOCKS ? (int)left : MOE_MMA_STAGE_BLOCKS;
    uint32_t frag[2][2][2][4]; /* [block % 2][m-tile][k-step] */
    moe_mma_decode_block(slot, 0, warp_multipliers[4 * g], frag[0]);
#pragma unroll
    for (int jj = 0; jj < MOE_MMA_STAGE_BLOCKS; jj++) {
        if (jj >= blocks)
            break;
        uint32_t(&f)[2][2][4] = frag[jj % 2];
        /* block jj's 32 k: in tile jj / 2, 64 bytes in for an odd block; a k-step is 32 bytes */
        const uint64_t b_desc = sy_wgmma_desc_advance(x_desc, (uint32_t)(jj / 2 * stage::x_tile + jj % 2 * 64));
        sy_wgmma_hold(f[0]);
        sy_wgmma_hold(f[1]);
        sy_wgmma_hold(acc[0]);
        sy_wgmma_hold(acc[1]);
        sy_wgmma_fence();
#pragma unroll
        for (int mt = 0; mt < 2; mt++) {
            sy_wgmma_m64k16<N, 0, true>(acc[mt], f[mt][0], b_desc);
            if (PLANES)
                sy_wgmma_m64k16<N, 0, true>(acc[mt], f[mt][0], sy_wgmma_desc_advance(b_desc, stage::x_plane));
            sy_wgmma_m64k16<N, 0, true>(acc[mt], f[mt][1], sy_wgmma_desc_advance(b_desc, 32));
            if (PLANES)
                sy_wgmma_m64k16<N, 0, true>(acc[mt], f[mt][1], sy_wgmma_desc_advance(b_desc, stage::x_plane + 32));
        }
        sy_wgmma_commit();
        if (jj + 1 < blocks) {
            /* block jj - 1's products, the last readers of the other half of A, are done */
            sy_wgmma_wait<1>();
            uint32_t(&next)[2][2][4] = frag[(jj + 1) % 2];
            sy_wgmma_hold(next[0]);
            sy_wgmma_hold(next[1]);
            moe_mma_decode_block(slot, jj + 1, warp_multipliers[4 * g + jj + 1], next);
        }
    }
    sy_wgmma_wait<0>();
    sy_wgmma_hold(acc[0]);
    sy_wgmma_hold(acc[1]);
    sy_wgmma_hold(frag[0][0]);
    sy_wgmma_hold(frag[0][1]);
    sy_wgmma_hold(frag[1][0]);
    sy_wgmma_hold(frag[1][1]);
}
/* WG: the warpgroup product (NT 8); smem then 1024-byte aligned. */
template <bool W13, int NT, bool PLANES, int RING, bool WG>
static __device__ __forceinline__ void moe_mma_chunk(const moe_gpu_gemm &a, const moe_gpu_chunk &ch, uint32_t slice,
                                                     uint8_t *smem)
{
    static_assert(!WG || NT == 8, "the warpgroup product takes chunks of 64 columns");
    using cta = moe_mma_cta<WG>;
    uint4 *warp_multipliers = (uint4 *)(smem + RING) + (threadIdx.x / MOE_MMA_LANES) * MOE_MMA_LANES;
    const int tid = (int)threadIdx.x, lane = tid % MOE_MMA_LANES, warp = tid / MOE_MMA_LANES;
    const int g = lane / 4, c = lane % 4;
    const moe_gpu_matrix &m = a.m;
    const uint32_t e = (uint32_t)ch.expert;
    using stage = moe_mma_stage<NT, PLANES, RING, WG>;
    constexpr int STAGES = stage::count;

    /* Rows up to the padded size exist (zeros), so only stores check the unpadded size, and every
     * stage's copies stay inside the matrix. */
    const uint8_t *blocks = m.blocks + e * m.expert_bytes, *scales = m.scales + e * m.expert_scales;
    moe_mma_sources<stage::x_rows> src;
#pragma unroll
    for (int i = 0; i < 4; i++)
        src.w[i] = blocks +
                   sy_moe_block_offset(moe_mma_tile_row<W13, WG>(a, slice, tid / 64 + cta::threads / 64 * i), 0, m.kblocks) +
                   (tid % 64) * 16;
    src.scale = scales + sy_moe_scale_offset(moe_mma_tile_row<W13, WG>(a, slice, tid / 16) / 32u * 32u, 0, m.kblocks) +
                (tid % 16) * 16;
    src.x_column = (uint32_t)(tid % 16);
#pragma unroll
    for (int i = 0; i < stage::x_rows; i++) {
        const int row = tid / 16 + cta::threads / 16 * i;
        src.x_row[i] = row < ch.count ? (const char *)a.in + (int64_t)(a.grouped[ch.first + row] /
                                                                        (int32_t)a.in_pair_divisor) *
                                                                 a.in_stride * 2
                                      : NULL;
    }
    /* np of sy_moe_scale_offset for each of this warp's two tiles, and the tops (sy_moe_row_top) of
     * the lane's rows g and g + 8 of each. */
    uint32_t tile_np[2];
    int row_top[2][2];
    const uint8_t *tops = m.row_top + e * m.expert_bias;
#pragma unroll
    for (int mt = 0; mt < 2; mt++) {
        const uint32_t q = moe_mma_tile_row<W13, WG>(a, slice, warp * 2 + mt);
        tile_np[mt] = (q / 16u) % 2u;
#pragma unroll
        for (int h = 0; h < 2; h++)
            row_top[mt][h] = tops[q + (uint32_t)g + 8u * (uint32_t)h];
    }

    const uint32_t first = W13 ? slice * cta::w13_indices + (uint32_t)warp * 16u
                               : slice * cta::w2_rows + (uint32_t)warp * 32u;
    const bool live = first < a.out_rows;
    float acc[2][NT][4];
    sy_mma_zero(acc);

    const uint32_t kb = m.kblocks_used, stages = (kb + MOE_MMA_STAGE_BLOCKS - 1) / MOE_MMA_STAGE_BLOCKS;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if ((uint32_t)s < stages)
            moe_mma_issue<NT, PLANES, RING, WG>(a, src, (uint32_t)s, smem + s * stage::bytes);
        sy_cp_async_commit(); /* empty groups keep the count the wait relies on */
    }
    /* The sums are of the weights times 2^(127 - top_row) and of each input row times
     * 2^(MOE_MMA_INPUT_EXP - e_row): sum (row, t) comes back times 2^(top_row - 127) (row_back) and
     * 2^(e_row - MOE_MMA_INPUT_EXP) (col_exp). Read once, with the first stages' copies in flight, where the
     * epilogue's loads of them, each after the pair's own and behind the stores before it, cost w13
     * 13% at 8192 tokens (H200). The main loop's first barrier orders these writes before the
     * epilogue's reads. */
    int *col_exp = (int *)(smem + RING + cta::multiplier_bytes);
    if (tid < NT * MOE_MMA_N) {
        const uint32_t pair = tid < ch.count ? (uint32_t)a.grouped[ch.first + tid] : 0u;
        col_exp[tid] = (a.in_exp ? a.in_exp[pair / a.in_pair_divisor] : a.in_exp_fixed) - MOE_MMA_INPUT_EXP;
    }
    uint32_t cur = 0; /* stage st's slot, st % STAGES */
    for (uint32_t st = 0; st < stages; st++) {
        sy_cp_async_wait<STAGES - 2>(); /* the oldest stage of the ring has landed */
        if constexpr (WG)
            sy_fence_proxy_async(); /* ... for the warpgroup products too */
        /* Stage st is visible to all, and every warp is done with the slot refilled next. */
        __syncthreads();
        const uint32_t next = st + STAGES - 1, next_slot = cur == 0 ? STAGES - 1 : cur - 1;
        if (next < stages)
            moe_mma_issue<NT, PLANES, RING, WG>(a, src, next, smem + next_slot * stage::bytes);
        sy_cp_async_commit();
        /* A warpgroup product takes its four warps: a warp past the rows multiplies the padding's zeros. */
        if constexpr (WG)
            moe_mma_multiply_stage_wg<NT, PLANES, RING>(smem + cur * stage::bytes, st, kb, tile_np, row_top,
                                                        warp_multipliers, acc);
        else if (live)
            moe_mma_multiply_stage<NT, PLANES, RING>(smem + cur * stage::bytes, st, kb, tile_np, row_top, warp_multipliers,
                                                     acc);
        cur = cur + 1 == STAGES ? 0 : cur + 1;
    }
    if (!live)
        return;

    const float *bias = m.bias + e * m.expert_bias;
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int t = nt * MOE_MMA_N + 2 * c + r % 2;
            if (t >= ch.count)
                continue;
            const int64_t pair = a.grouped[ch.first + t];
            const uint32_t row = first + (uint32_t)g + 8u * (uint32_t)(r / 2);
            const int col = col_exp[t], back0 = col + row_top[0][r / 2] - 127, back1 = col + row_top[1][r / 2] - 127;
            if (W13) {
                if (row < a.out_rows) {
                    const float act = moe_gpu_swiglu(moe_gpu_scale_back(acc[0][nt][r], back0) + bias[row],
                                                     moe_gpu_scale_back(acc[1][nt][r], back1) + bias[a.inter_padded + row],
                                                     a.alpha, a.limit);
                    if (a.act_exp) {
                        /* act as w2's input planes, staged as moe_gpu_stage_kernel would with the
                         * bound for the row's exponent: each group of 8 in the product's pair order. */
                        const int64_t at = pair * a.out_rows + sy_e2m1_input_slot(row, WG);
                        if (a.out_lo_offset)
                            sy_mma_split_bf16_one(act * a.act_scale, &a.out_hi[at], &a.out_hi[a.out_lo_offset + at]);
                        else
                            a.out_hi[at] = sy_f32_to_bf16(act * a.act_scale);
                    } else {
                        a.out[pair * a.out_rows + row] = act;
                    }
                }
            } else {
#pragma unroll
                for (int mt = 0; mt < 2; mt++)
                    if (row + 16u * (uint32_t)mt < a.out_rows)
                        a.out[pair * a.out_rows + row + 16u * (uint32_t)mt] =
                            moe_gpu_scale_back(acc[mt][nt][r], mt ? back1 : back0) + bias[row + 16u * (uint32_t)mt];
            }
        }
}

/* WIDE: chunks of up to MOE_MMA_WIDE_TOKENS pairs, for calls with many pairs an expert, where the
 * weights' decode is shared by up to 64 tokens instead of 16 (the ring and the accumulators leave 2
 * CTAs an SM), on the warpgroup products where WG (every chunk as 64 columns); otherwise chunks of
 * up to MOE_MMA_TOKENS, 5 CTAs an SM. */
template <bool W13, bool PLANES, bool WIDE, bool WG>
static __global__ void __launch_bounds__(moe_mma_cta<WG>::threads, WG ? 1 : WIDE ? 2 : 5) moe_mma_kernel(moe_gpu_gemm a)
{
    static_assert(!WG || WIDE, "the warpgroup product is a wide one");
    SY_GPU_DYNAMIC_SHARED_ALIGNED(uint8_t, moe_mma_smem, 16);
    sy_gpu_wait_for_previous_kernel();
    /* Wide: the output slices of a chunk run side by side (blockIdx.x), so that its input rows,
     * read by every slice, stay in L2; at 8192 tokens w2's input planes (94 MB a pass when this was
     * measured, 189 MB now) are larger than L2 and were read from DRAM once per slice when the
     * chunks went first. */
    const uint32_t chunk = WIDE ? blockIdx.y : blockIdx.x, slice = WIDE ? blockIdx.x : blockIdx.y;
    if ((int32_t)chunk >= *a.n_chunks)
        return;
    const moe_gpu_chunk ch = a.chunks[chunk];
    /* The n-tile count is uniform over the CTA: each gets its own unrolled body and ring. */
    constexpr int R = moe_mma_cta<WG>::ring;
    if constexpr (WG) {
        uint8_t *aligned = moe_mma_smem + (0u - (uint32_t)__cvta_generic_to_shared(moe_mma_smem)) % MOE_MMA_WG_ALIGN_SLACK;
        moe_mma_chunk<W13, 8, PLANES, R, true>(a, ch, slice, aligned);
    } else if constexpr (WIDE) {
        if (ch.count <= 2 * MOE_MMA_N)
            moe_mma_chunk<W13, 2, PLANES, R, false>(a, ch, slice, moe_mma_smem);
        else if (ch.count <= 4 * MOE_MMA_N)
            moe_mma_chunk<W13, 4, PLANES, R, false>(a, ch, slice, moe_mma_smem);
        else if (ch.count <= 6 * MOE_MMA_N)
            moe_mma_chunk<W13, 6, PLANES, R, false>(a, ch, slice, moe_mma_smem);
        else
            moe_mma_chunk<W13, 8, PLANES, R, false>(a, ch, slice, moe_mma_smem);
    } else {
        if (ch.count <= MOE_MMA_N)
            moe_mma_chunk<W13, 1, PLANES, MOE_MMA_RING_BYTES, false>(a, ch, slice, moe_mma_smem);
        else
            moe_mma_chunk<W13, 2, PLANES, MOE_MMA_RING_BYTES, false>(a, ch, slice, moe_mma_smem);
    }
}

/* Pairs of one chunk for a call of `pairs` routed pairs over `experts`: the wide kernel's when the
 * experts average MOE_MMA_WIDE_AVERAGE pairs or more. */
static inline int32_t moe_mma_chunk_tokens(int64_t pairs, uint32_t experts)
{
    return pairs >= (int64_t)experts * MOE_MMA_WIDE_AVERAGE ? MOE_MMA_WIDE_TOKENS : MOE_MMA_TOKENS;
}

/* Launches the product of one matrix over every chunk, planned with chunks of chunk_tokens pairs. */
template <bool W13, bool PLANES, bool WIDE, bool WG>
static sy_status moe_mma_launch_as(const moe_gpu_gemm &g, unsigned max_chunks, gpuStream_t gs, sy_error *err)
{
    using cta = moe_mma_cta<WG>;
    const int smem = cta::smem_bytes(WIDE ? cta::ring : MOE_MMA_RING_BYTES);
    /* Past 48 KB of shared memory a kernel must opt in. The attribute belongs to the current
     * device, so it is set on every launch rather than once per process. */
    SY_GPU_CHECKF(err,
                  cudaFuncSetAttribute(moe_mma_kernel<W13, PLANES, WIDE, WG>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
                  "for %d bytes of shared memory", smem);
    const unsigned slices = W13 ? (g.out_rows + cta::w13_indices - 1) / cta::w13_indices
                                : (g.out_rows + cta::w2_rows - 1) / cta::w2_rows;
    const dim3 grid = WIDE ? dim3(slices, max_chunks) : dim3(max_chunks, slices);
    SY_GPU_LAUNCH_CHAINED(grid, cta::threads, smem, gs, moe_mma_kernel<W13, PLANES, WIDE, WG>)(g);
    SY_GPU_CHECK_LAUNCH(err, W13 ? "moe_mma_kernel (w13)" : "moe_mma_kernel (w2)");
    return SY_OK;
}

/* warpgroup: the wide product runs on the warpgroup products (sy_wgmma_runs_on), and its
 * inputs are staged in their order (sy_e2m1_input_slot). */
template <bool W13, bool PLANES>
static sy_status moe_mma_launch(const moe_gpu_gemm &g, int32_t chunk_tokens, bool warpgroup, unsigned max_chunks,
                                gpuStream_t gs, sy_error *err)
{
    if (chunk_tokens <= MOE_MMA_TOKENS)
        return moe_mma_launch_as<W13, PLANES, false, false>(g, max_chunks, gs, err);
#if defined(SY_CUDA_SM90A) || defined(SY_EMU_TENSOR_CORES)
    if (warpgroup)
        return moe_mma_launch_as<W13, PLANES, true, true>(g, max_chunks, gs, err);
#else
    (void)warpgroup;
#endif
    return moe_mma_launch_as<W13, PLANES, true, false>(g, max_chunks, gs, err);
}

#endif
