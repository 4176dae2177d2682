/* GPU implementation of the MXFP4 MoE ops, shared by moe_mxfp4_interleave and moe_mxfp4_separated:
 * each plugin's gpu.cu is this header, and its plugin.c binds the tile layout at init
 * (moe_mxfp4_gpu.h). Every kernel takes the layout as a parameter and reaches the shuffled bytes
 * only through moe_layout.h, so the two plugins run the same code on different addresses.
 *
 * prepare (all on the device): zero the buffer, the neutral scale 0x7F over both scale sections,
 * the header, then one thread per checkpoint block copies its 16 bytes and its scale byte to
 * sy_moe_block_offset / sy_moe_scale_offset of its tile-order row, and one thread per bias writes it
 * as f32 in de-interleaved order: the same bytes as the host prepare (moe_mxfp4_cpu.c), except that
 * on CUDA each 4-byte group's codes go in the tensor-core order (moe_layout.h's code_order,
 * mxfp4_bf16_pairs.h), which the header records.
 *
 * route: 32 lanes a token find the k largest logits under the host's order (ties to the lower id,
 * NaN last; sy_moe_ranks_before) and finish with the host's softmax (sy_moe_route_softmax).
 *
 * forward, per pass of the tokens moe_gpu_pass_tokens allows (about 256 routed pairs an expert):
 *   count    experts' pair counts (atomic increments: the counts do not depend on their order)
 *   plan     one block: checks the prepared header against the shape and layout, prefix sums of the
 *            counts, and a list of chunks (expert, first, count <= the product's chunk size) per expert
 *   scatter  the pairs grouped by expert
 *   stage    (CUDA) x as the tensor-core product takes it: aligned rows in its pair order, each
 *            row times a power of two of its own, f32 x as bf16 high and low planes
 *   w13      per (chunk, a slice of intermediate indices): gate and up rows times the chunk's
 *            tokens, + b13, clamped SwiGLU -> act[pair][I] (CUDA: as two bf16 planes for w2, times
 *            a fixed power of two; where the SwiGLU has no bound, f32 rows that a second stage pass
 *            takes)
 *   w2       per (chunk, a slice of hidden rows): W2 act + b2 -> y[pair][H]
 *   combine  out[t][n] = sum over k, in k order, of weight * y[t*k + k'][n], rounded once.
 * On CUDA the two products run on tensor cores (moe_mxfp4_gpu_mma.cuh, chunks of up to 16 pairs, or
 * 64 in calls with many pairs an expert).
 * The rest of this comment is the CUDA-core product the HIP build uses. Each weight byte of an
 * expert is read once per chunk of up to 4 of its tokens (16-byte loads, 16 rows x 16 blocks =
 * 4 KB per CTA step, coalesced), and every sum is a function of one pair's
 * data alone: the position a pair lands in inside its group (set by atomics), the chunk it shares
 * and the grouping order never reach the arithmetic, and neither does the layout (a CTA's thread
 * (row, column) owns the same logical row and blocks in both). Repeated runs and the two plugins
 * therefore agree bit for bit; against the host (an sgemm over decoded tiles) only the order of
 * the f32 sums differs.
 *
 * The inner product. An E2M1 code becomes, in four integer operations, the f32 whose bits hold its
 * sign at bit 31 and its exponent and mantissa bits at 24..22: exactly e2m1 * 2^-126 (the codes of
 * +-0.5 land on the subnormal 2^-127; neither toolkit flushes f32 subnormals without fast-math, and
 * the build uses none). The staged inputs are x * 2^64, so products are x * e2m1 * 2^-62, in the
 * normal range for |x * e2m1| >= 2^-64, rounded exactly as x * e2m1 would be. A block's 32 products
 * are summed, then scaled by 2^62 and by the block's E8M0 scale: powers of two, exact. Inputs of
 * magnitude 2^64 or more would overflow the staging and are outside what this kernel supports.
 *
 * Speed: each weight element costs its decode (4 ops) plus one FMA per token of the chunk on the
 * CUDA cores, and an expert's weights are read once per chunk of 4. At 128 tokens top-4 of 128
 * experts on an H200 that measured 2.56 ms against a 0.39 ms weight floor, which is why CUDA
 * builds use the tensor-core product instead. */
#ifndef SY_MOE_MXFP4_GPU_CUH
#define SY_MOE_MXFP4_GPU_CUH

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_runtime.h"
#include "gpu_warp.h"
#include "moe_layout.h"
#include "moe_mxfp4_gpu.h"
#include "moe_route.h"
#include "mxfp4_bf16_pairs.h"
#include "switchyard/plugin.h"
#include "sy_elem_gpu.cuh"
#include "sy_mxfp4.h"
#include "sy_numeric.h"
#include "workspace_gpu.cuh"
extern "C" {
#include "sy_op_check.h"
}

/* The tensor-core product (moe_mxfp4_gpu_mma.cuh) in CUDA builds, and in tests/gpu's CPU emulator
 * at a warp of 32, which emulates its fragments; HIP builds and the emulator at 64 run the
 * CUDA-core product. */
#if defined(SY_VENDOR_CUDA) || defined(SY_EMU_TENSOR_CORES)
#define SY_MOE_TENSOR_CORES 1
#else
#define SY_MOE_TENSOR_CORES 0
#endif

enum {
    MOE_GPU_THREADS = 256,      /* forward CTAs: 16 rows of a tile x 16 block columns; any warp width */
    MOE_GPU_TILE_ROWS = 16,     /* rows of one tile of the shuffled layout */
    MOE_GPU_COLUMNS = 16,       /* MXFP4 blocks of a row read side by side by one CTA */
    MOE_GPU_TILES = 4,          /* tiles per CTA: w13 2 gate + 2 up (32 intermediate indices), w2 64 rows */
    MOE_GPU_TOKENS = 4,         /* routed tokens per chunk: one CTA's token count */
    MOE_GPU_STAGE_BLOCKS = 32,  /* input blocks (of 32 values) staged in shared memory at a time */
    MOE_GPU_STAGE_STRIDE = 36,  /* floats per staged block: 4 of padding put neighbouring columns on other banks */
    MOE_GPU_REDUCE_STRIDE = 17, /* floats per (tile, token, row) of the column reduction, also against conflicts */
    /* Routed pairs a pass (moe_gpu_pass_tokens): MOE_GPU_PASS_EXPERT_PAIRS an expert on average, at
     * most MOE_GPU_PASS_MAX_PAIRS, and no more than fit f32 act and y rows in
     * MOE_GPU_PASS_MAX_BYTES (755 MB at gpt-oss's 2880). 8192 tokens top-4 of 128 experts in one pass
     * give each expert about 256 pairs, 4 or 5 chunks of 64, where passes of 8192 pairs gave about 64
     * and a second chunk of a few pairs to half of them, each chunk decoding all of the expert's
     * weights: H100, 8192 tokens 6.71-6.85 -> 5.13-5.26 ms (16384 pairs: 5.61-5.86 ms). */
    MOE_GPU_PASS_EXPERT_PAIRS = 256,
    MOE_GPU_PASS_MAX_PAIRS = 32768,
    MOE_GPU_PASS_MAX_BYTES = 1 << 30,
    MOE_GPU_PLAN_THREADS = SY_MOE_MXFP4_MAX_EXPERTS,
    MOE_GPU_SIMPLE_THREADS = 256,
    /* lanes that route one token: a warp of 32, half a wavefront of 64 (shuffles stay inside) */
    MOE_GPU_ROUTE_LANES = 32
};

#define MOE_GPU_W13_INDICES (MOE_GPU_TILES / 2 * MOE_GPU_TILE_ROWS) /* intermediate indices per w13 CTA */
#define MOE_GPU_W2_ROWS (MOE_GPU_TILES * MOE_GPU_TILE_ROWS)          /* hidden rows per w2 CTA */
#define MOE_GPU_STAGE_FLOATS (MOE_GPU_STAGE_BLOCKS * MOE_GPU_STAGE_STRIDE)
#define MOE_GPU_SMEM_FLOATS (MOE_GPU_TOKENS * MOE_GPU_STAGE_FLOATS)

static_assert(MOE_GPU_THREADS == MOE_GPU_TILE_ROWS * MOE_GPU_COLUMNS, "one thread per (row, column)");
static_assert(MOE_GPU_STAGE_BLOCKS % MOE_GPU_COLUMNS == 0, "whole column steps per stage");
static_assert(MOE_GPU_TILES * MOE_GPU_TOKENS * MOE_GPU_TILE_ROWS * MOE_GPU_REDUCE_STRIDE <= MOE_GPU_SMEM_FLOATS,
              "the column reduction reuses the staging buffer");
static_assert(MOE_GPU_TILES * MOE_GPU_TOKENS * MOE_GPU_TILE_ROWS <= MOE_GPU_THREADS, "one thread per output");

/* ------------------------------------------------------------------------------------------ */
/* context and argument checks                                                                 */

typedef struct moe_gpu_ctx {
    uint32_t gate_up_layout;
    bool warpgroup; /* the wide product on Hopper's warpgroup products (moe_gpu_warpgroup_runs) */
    sy_gpu_workspace ws;
} moe_gpu_ctx;

static bool moe_gpu_warpgroup_runs(const sy_host_api *host);

extern "C" sy_status sy_moe_mxfp4_gpu_init(const sy_host_api *host, uint32_t gate_up_layout, void **ctx, sy_error *err)
{
    if (gate_up_layout != SY_MOE_GATE_UP_INTERLEAVE && gate_up_layout != SY_MOE_GATE_UP_SEPARATED)
        return sy_op_fail(err, SY_E_INTERNAL,
                          "moe init: gate_up_layout %u is neither interleave (%d) nor separated (%d)", gate_up_layout,
                          SY_MOE_GATE_UP_INTERLEAVE, SY_MOE_GATE_UP_SEPARATED);
    moe_gpu_ctx *c = (moe_gpu_ctx *)calloc(1, sizeof *c);
    if (!c)
        return sy_op_fail(err, SY_E_NOMEM, "moe init: out of memory for the plugin context");
    c->gate_up_layout = gate_up_layout;
    c->warpgroup = moe_gpu_warpgroup_runs(host);
    c->ws.host = host;
    *ctx = c;
    return SY_OK;
}

extern "C" void sy_moe_mxfp4_gpu_fini(void *ctx)
{
    moe_gpu_ctx *c = (moe_gpu_ctx *)ctx;
    if (!c)
        return;
    sy_gpu_workspace_release(&c->ws);
    free(c);
}

static int moe_gpu_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

/* The prepared buffer is read and written with 16-byte accesses. */
static sy_status moe_gpu_check_prepared(const char *op, const void *prepared, sy_error *err)
{
    if (!prepared)
        return sy_op_fail(err, SY_E_INVALID, "%s: prepared is NULL", op);
    if (!moe_gpu_aligned16(prepared))
        return sy_op_fail(err, SY_E_INVALID, "%s: prepared %p is not 16-byte aligned", op, prepared);
    return SY_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* prepare                                                                                     */

/* One checkpoint matrix and where its shuffled copy goes. */
typedef struct moe_gpu_move {
    const uint8_t *ck_blocks, *ck_scales; /* [E][rows][ck_kblocks][16], [E][rows][ck_kblocks] */
    uint8_t *blocks, *scales;             /* expert 0's shuffled sections */
    uint8_t *row_top;                     /* expert 0's row tops (sy_moe_row_top) */
    uint64_t expert_bytes, expert_scales, expert_rows;
    uint64_t count; /* E * rows * ck_kblocks */
    uint32_t rows, ck_kblocks, kblocks;
    uint32_t is_w13, gate_up_layout, inter_padded;
    uint32_t vector_copy; /* 1: both block pointers 16-byte aligned */
} moe_gpu_move;

/* The order this build's product decodes E2M1 codes in (moe_layout.h): the tensor-core product's
 * on CUDA, the checkpoint's for HIP's CUDA-core product. */
#if SY_MOE_TENSOR_CORES
static constexpr uint32_t MOE_GPU_CODE_ORDER = SY_MOE_CODES_TENSOR_PAIRS;
#else
static constexpr uint32_t MOE_GPU_CODE_ORDER = SY_MOE_CODES_CHECKPOINT;
#endif

static __device__ __forceinline__ uint32_t moe_gpu_codes_to_order(uint32_t checkpoint_group)
{
    return MOE_GPU_CODE_ORDER == SY_MOE_CODES_TENSOR_PAIRS ? sy_e2m1x8_to_pair_order(checkpoint_group)
                                                           : checkpoint_group;
}

/* Tile-order row q of checkpoint row cr: w13's row 2i + g is de-interleaved row g*Ip + i. */
static __device__ __forceinline__ uint32_t moe_gpu_tile_row_of(const moe_gpu_move &m, uint32_t cr)
{
    return m.is_w13 ? sy_moe_w13_tile_row(m.gate_up_layout, (cr % 2u) * m.inter_padded + cr / 2u, m.inter_padded)
                    : cr;
}

/* One thread a checkpoint row: its top scale (sy_moe_row_top), at its tile-order row. */
static __global__ void moe_gpu_row_top_kernel(moe_gpu_move m)
{
    const uint64_t rows = m.count / m.ck_kblocks;
    for (uint64_t row = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; row < rows;
         row += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t e = (uint32_t)(row / m.rows);
        m.row_top[e * m.expert_rows + moe_gpu_tile_row_of(m, (uint32_t)(row % m.rows))] =
            sy_moe_row_top(m.ck_scales + row * m.ck_kblocks, m.ck_kblocks);
    }
}

static __global__ void moe_gpu_move_kernel(moe_gpu_move m)
{
    for (uint64_t idx = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < m.count;
         idx += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t j = (uint32_t)(idx % m.ck_kblocks);
        const uint64_t row = idx / m.ck_kblocks;
        const uint32_t e = (uint32_t)(row / m.rows), q = moe_gpu_tile_row_of(m, (uint32_t)(row % m.rows));
        uint8_t *dst = m.blocks + e * m.expert_bytes + sy_moe_block_offset(q, j, m.kblocks);
        const uint8_t *src = m.ck_blocks + idx * SY_MXFP4_BLOCK_BYTES;
        /* The block's four groups of 8 codes as little-endian words, as the product reads them. */
        uint32_t group[4];
        if (m.vector_copy) {
            const uint4 v = *(const uint4 *)src;
            group[0] = v.x, group[1] = v.y, group[2] = v.z, group[3] = v.w;
        } else {
            for (int i = 0; i < 4; i++)
                group[i] = (uint32_t)src[4 * i] | (uint32_t)src[4 * i + 1] << 8 | (uint32_t)src[4 * i + 2] << 16 |
                           (uint32_t)src[4 * i + 3] << 24;
        }
        for (int i = 0; i < 4; i++)
            group[i] = moe_gpu_codes_to_order(group[i]);
        if (m.vector_copy) {
            *(uint4 *)dst = make_uint4(group[0], group[1], group[2], group[3]);
        } else {
            for (int b = 0; b < SY_MXFP4_BLOCK_BYTES; b++)
                dst[b] = (uint8_t)(group[b / 4] >> 8 * (b % 4));
        }
        m.scales[e * m.expert_scales + sy_moe_scale_offset(q, j, m.kblocks)] = m.ck_scales[idx];
    }
}

/* Biases of both matrices as f32: b13 in de-interleaved order (row g*Ip + i), b2 as given. */
typedef struct moe_gpu_bias_move {
    const void *w13_bias, *w2_bias;
    int32_t w13_dtype, w2_dtype;
    float *b13, *b2;
    uint32_t experts, inter, hidden, inter_padded, hidden_padded;
} moe_gpu_bias_move;

static __device__ __forceinline__ float moe_gpu_load_f32_or_bf16(const void *p, int32_t dtype, uint64_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static __global__ void moe_gpu_bias_kernel(moe_gpu_bias_move b)
{
    const uint64_t n13 = (uint64_t)b.experts * 2u * b.inter, n2 = (uint64_t)b.experts * b.hidden;
    for (uint64_t idx = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n13 + n2;
         idx += (uint64_t)gridDim.x * blockDim.x) {
        if (idx < n13) {
            const uint32_t e = (uint32_t)(idx / (2u * b.inter)), cr = (uint32_t)(idx % (2u * b.inter));
            b.b13[(uint64_t)e * 2u * b.inter_padded + (cr % 2u) * b.inter_padded + cr / 2u] =
                moe_gpu_load_f32_or_bf16(b.w13_bias, b.w13_dtype, idx);
        } else {
            const uint64_t i = idx - n13;
            const uint32_t e = (uint32_t)(i / b.hidden), n = (uint32_t)(i % b.hidden);
            b.b2[(uint64_t)e * b.hidden_padded + n] = moe_gpu_load_f32_or_bf16(b.w2_bias, b.w2_dtype, i);
        }
    }
}

static __global__ void moe_gpu_header_kernel(sy_moe_prepared_header h, sy_moe_prepared_header *dst)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *dst = h;
}

/* Blocks for a grid-stride loop over n items: enough to fill a large GPU several times over. */
static unsigned moe_gpu_grid_for(uint64_t n)
{
    uint64_t blocks = (n + MOE_GPU_SIMPLE_THREADS - 1) / MOE_GPU_SIMPLE_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > 65536 ? 65536 : blocks);
}

/* A row a block along x and its columns across y, a thread a column: the combine. One block a row
 * looping over 2880 columns held a thread to a chain of 12 memory waits (128 tokens: 10.2 us on the
 * H200). */
static dim3 moe_gpu_columns_grid(int64_t rows, uint32_t columns)
{
    const uint32_t y = (columns + MOE_GPU_SIMPLE_THREADS - 1) / MOE_GPU_SIMPLE_THREADS;
    return dim3((unsigned)rows, y < 1 ? 1 : y > 65535 ? 65535 : y);
}

static sy_moe_prepared_header moe_gpu_header_of(const sy_moe_dims *d, uint32_t layout)
{
    sy_moe_prepared_header h;
    h.magic = SY_MOE_PREPARED_MAGIC;
    h.version = SY_MOE_PREPARED_VERSION;
    h.gate_up_layout = layout;
    h.experts = d->experts;
    h.hidden = d->hidden;
    h.intermediate = d->intermediate;
    h.hidden_padded = d->hidden_padded;
    h.intermediate_padded = d->intermediate_padded;
    h.code_order = MOE_GPU_CODE_ORDER;
    return h;
}

extern "C" sy_status sy_moe_mxfp4_gpu_prepare(void *ctx, sy_stream stream, const sy_moe_prepare_args *a, sy_error *err)
{
    static const char op[] = "moe prepare";
    moe_gpu_ctx *c = (moe_gpu_ctx *)ctx;
    sy_status st = sy_moe_mxfp4_check_call(op, c, 1, a, a ? a->struct_size : 0u, sizeof *a, "sy_moe_prepare_args",
                                           a ? &a->shape : NULL, err);
    if (st != SY_OK)
        return st;
    const sy_moe_shape *s = &a->shape;
    st = sy_moe_mxfp4_check_prepare_tensors(op, a, err);
    if (st == SY_OK)
        st = moe_gpu_check_prepared(op, a->prepared, err);
    if (st != SY_OK)
        return st;

    const sy_moe_dims d = sy_moe_dims_of(s->num_experts, s->hidden, s->intermediate);
    const sy_moe_sections sec = sy_moe_sections_of(&d);
    const gpuStream_t gs = sy_gpu_stream(stream);
    uint8_t *base = (uint8_t *)a->prepared;
    const uint64_t E = d.experts;

    /* Padding first: zero weights and biases, the neutral scale; then the checkpoint over it. */
    SY_GPU_CHECKF(err, gpuMemsetAsync(base, 0, sec.total, gs), "for %llu bytes of prepared weights",
                  (unsigned long long)sec.total);
    SY_GPU_CHECKF(err, gpuMemsetAsync(base + sec.w13_scales, SY_E8M0_ONE, E * sec.w13_expert_scales, gs),
                  "for the w13 scales");
    SY_GPU_CHECKF(err, gpuMemsetAsync(base + sec.w2_scales, SY_E8M0_ONE, E * sec.w2_expert_scales, gs),
                  "for the w2 scales");
    SY_GPU_CHECKF(err, gpuMemsetAsync(base + sec.w13_row_top, SY_E8M0_ONE, E * 2u * d.intermediate_padded, gs),
                  "for the w13 row tops");
    SY_GPU_CHECKF(err, gpuMemsetAsync(base + sec.w2_row_top, SY_E8M0_ONE, E * d.hidden_padded, gs),
                  "for the w2 row tops");
    SY_GPU_LAUNCH(1, 64, 0, gs, moe_gpu_header_kernel)(moe_gpu_header_of(&d, c->gate_up_layout),
                                                       (sy_moe_prepared_header *)(base + sec.header));
    SY_GPU_CHECK_LAUNCH(err, "moe_gpu_header_kernel");

    for (int w13 = 1; w13 >= 0; w13--) {
        moe_gpu_move m;
        const sy_tensor *blocks = w13 ? &a->w13_blocks : &a->w2_blocks;
        m.ck_blocks = (const uint8_t *)blocks->data;
        m.ck_scales = (const uint8_t *)(w13 ? a->w13_scales.data : a->w2_scales.data);
        m.blocks = base + (w13 ? sec.w13_blocks : sec.w2_blocks);
        m.scales = base + (w13 ? sec.w13_scales : sec.w2_scales);
        m.row_top = base + (w13 ? sec.w13_row_top : sec.w2_row_top);
        m.expert_rows = w13 ? 2u * d.intermediate_padded : d.hidden_padded;
        m.expert_bytes = w13 ? sec.w13_expert_bytes : sec.w2_expert_bytes;
        m.expert_scales = w13 ? sec.w13_expert_scales : sec.w2_expert_scales;
        m.rows = w13 ? 2u * d.intermediate : d.hidden;
        m.ck_kblocks = (w13 ? d.hidden : d.intermediate) / SY_MXFP4_BLOCK;
        m.kblocks = (w13 ? d.hidden_padded : d.intermediate_padded) / SY_MXFP4_BLOCK;
        m.count = E * m.rows * m.ck_kblocks;
        m.is_w13 = (uint32_t)w13;
        m.gate_up_layout = c->gate_up_layout;
        m.inter_padded = d.intermediate_padded;
        m.vector_copy = (uint32_t)moe_gpu_aligned16(m.ck_blocks);
        SY_GPU_LAUNCH(moe_gpu_grid_for(m.count), MOE_GPU_SIMPLE_THREADS, 0, gs, moe_gpu_move_kernel)(m);
        SY_GPU_CHECK_LAUNCH(err, "moe_gpu_move_kernel");
        SY_GPU_LAUNCH(moe_gpu_grid_for(E * m.rows), MOE_GPU_SIMPLE_THREADS, 0, gs, moe_gpu_row_top_kernel)(m);
        SY_GPU_CHECK_LAUNCH(err, "moe_gpu_row_top_kernel");
    }

    moe_gpu_bias_move b;
    b.w13_bias = a->w13_bias.data;
    b.w2_bias = a->w2_bias.data;
    b.w13_dtype = a->w13_bias.dtype;
    b.w2_dtype = a->w2_bias.dtype;
    b.b13 = (float *)(base + sec.w13_bias);
    b.b2 = (float *)(base + sec.w2_bias);
    b.experts = d.experts;
    b.inter = d.intermediate;
    b.hidden = d.hidden;
    b.inter_padded = d.intermediate_padded;
    b.hidden_padded = d.hidden_padded;
    SY_GPU_LAUNCH(moe_gpu_grid_for(E * (2u * d.intermediate + d.hidden)), MOE_GPU_SIMPLE_THREADS, 0, gs,
                  moe_gpu_bias_kernel)(b);
    SY_GPU_CHECK_LAUNCH(err, "moe_gpu_bias_kernel");
    return SY_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* route                                                                                       */

/* One segment of MOE_GPU_ROUTE_LANES lanes a token. Lane l reads logits l, l + 32, ... (coalesced),
 * and the segment picks the k winners one a round: each lane offers its best logit among those that
 * rank after the last winner, and a butterfly of shuffles keeps the best offer under the host's
 * order (sy_moe_ranks_before, a total order: ties to the lower id, NaN last), so the ids are
 * sy_moe_route_token's; lane 0 then finishes with the host's softmax. One thread a token, reading
 * its 128 logits one strided load at a time and sorting in local memory, took 48 us for 128 tokens
 * (H200), which the decode step paid in each of its 36 layers. */
static __global__ void moe_gpu_route_kernel(const float *logits, int64_t stride, uint32_t experts, uint32_t k,
                                            int64_t tokens, int32_t *ids, float *weights)
{
    sy_gpu_wait_for_previous_kernel();
    const uint32_t lane = threadIdx.x % MOE_GPU_ROUTE_LANES;
    const int64_t t = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / MOE_GPU_ROUTE_LANES;
    /* Segments are aligned, so a segment past the last token leaves whole, before any shuffle. */
    if (t >= tokens)
        return;
    const float *row = logits + t * stride;
    float best[SY_MOE_MAX_TOP_K];
    uint32_t best_id[SY_MOE_MAX_TOP_K];
    float last = 0.0f;
    uint32_t last_id = 0;
    for (uint32_t r = 0; r < k; r++) {
        int have = 0;
        float v = 0.0f;
        uint32_t id = 0;
        for (uint32_t e = lane; e < experts; e += MOE_GPU_ROUTE_LANES) {
            const float x = row[e];
            if ((r == 0 || sy_moe_ranks_before(last, last_id, x, e)) && (!have || sy_moe_ranks_before(x, e, v, id))) {
                have = 1;
                v = x;
                id = e;
            }
        }
#pragma unroll
        for (int mask = MOE_GPU_ROUTE_LANES / 2; mask > 0; mask /= 2) {
            const float ov = sy_shfl_xor(v, mask);
            const uint32_t oid = sy_shfl_xor(id, mask);
            const int ohave = sy_shfl_xor(have, mask);
            if (ohave && (!have || sy_moe_ranks_before(ov, oid, v, id))) {
                have = 1;
                v = ov;
                id = oid;
            }
        }
        /* k <= experts: some lane always had an offer, and every lane now holds the winner. */
        last = v;
        last_id = id;
        best[r] = v;
        best_id[r] = id;
    }
    if (lane == 0)
        sy_moe_route_softmax(best, best_id, k, ids + t * k, weights + t * k);
}

extern "C" sy_status sy_moe_mxfp4_gpu_route(void *ctx, sy_stream stream, const sy_moe_route_args *a, sy_error *err)
{
    static const char op[] = "moe route";
    sy_status st = sy_moe_mxfp4_check_call(op, ctx, 0, a, a ? a->struct_size : 0u, sizeof *a, "sy_moe_route_args",
                                           a ? &a->shape : NULL, err);
    if (st != SY_OK)
        return st;
    int64_t T = 0;
    st = sy_moe_mxfp4_check_route_tensors(op, a, &T, err);
    const uint32_t E = a->shape.num_experts, k = a->shape.top_k;
    if (st != SY_OK || T == 0)
        return st;
    const int64_t per_block = MOE_GPU_SIMPLE_THREADS / MOE_GPU_ROUTE_LANES, blocks = (T + per_block - 1) / per_block;
    if (blocks > 0x7FFFFFFF)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld tokens exceed one launch", op, (long long)T);
    /* A single row's stride is free in the tensor view. */
    const int64_t stride = T == 1 ? (int64_t)E : a->logits.stride[0];
    SY_GPU_LAUNCH_CHAINED((unsigned)blocks, MOE_GPU_SIMPLE_THREADS, 0, sy_gpu_stream(stream), moe_gpu_route_kernel)(
        (const float *)a->logits.data, stride, E, k, T, (int32_t *)a->topk_ids.data, (float *)a->topk_weights.data);
    SY_GPU_CHECK_LAUNCH(err, "moe_gpu_route_kernel");
    return SY_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* forward: grouping                                                                           */

/* Up to the product's chunk size of routed pairs of one expert, pairs[first .. first + count). */
typedef struct moe_gpu_chunk {
    int32_t expert, first, count, reserved;
} moe_gpu_chunk;

static __global__ void moe_gpu_count_kernel(const int32_t *ids, int32_t pairs, uint32_t experts, int32_t *counts)
{
    const int32_t p = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (p < pairs && ids[p] >= 0 && (uint32_t)ids[p] < experts)
        atomicAdd(&counts[ids[p]], 1);
}

typedef struct moe_gpu_plan {
    const sy_moe_prepared_header *header; /* in the prepared buffer */
    sy_moe_prepared_header expected;
    const int32_t *counts;
    int32_t *offsets; /* [E + 1] */
    moe_gpu_chunk *chunks;
    int32_t *n_chunks, *valid;
    uint32_t experts;
    int32_t chunk_tokens; /* the product's chunk size */
} moe_gpu_plan;

/* Inclusive prefix sum over the block, in a fixed order (Hillis-Steele, double-buffered). */
static __device__ int32_t moe_gpu_block_scan(int32_t v, int32_t (*buf)[MOE_GPU_PLAN_THREADS])
{
    const int tid = (int)threadIdx.x;
    int cur = 0;
    buf[0][tid] = v;
    __syncthreads();
    for (int step = 1; step < MOE_GPU_PLAN_THREADS; step *= 2) {
        int32_t sum = buf[cur][tid] + (tid >= step ? buf[cur][tid - step] : 0);
        buf[1 - cur][tid] = sum;
        cur = 1 - cur;
        __syncthreads();
    }
    return buf[cur][tid];
}

static __global__ void __launch_bounds__(MOE_GPU_PLAN_THREADS) moe_gpu_plan_kernel(moe_gpu_plan a)
{
    __shared__ int32_t scan[2][MOE_GPU_PLAN_THREADS];
    __shared__ int32_t header_ok;
    sy_gpu_wait_for_previous_kernel();
    const uint32_t e = threadIdx.x;
    if (e == 0) {
        const sy_moe_prepared_header h = *a.header;
        header_ok = h.magic == a.expected.magic && h.version == a.expected.version &&
                    h.gate_up_layout == a.expected.gate_up_layout && h.experts == a.expected.experts &&
                    h.hidden == a.expected.hidden && h.intermediate == a.expected.intermediate &&
                    h.hidden_padded == a.expected.hidden_padded &&
                    h.intermediate_padded == a.expected.intermediate_padded &&
                    h.code_order == a.expected.code_order;
    }
    const int32_t count = e < a.experts ? a.counts[e] : 0;
    const int32_t n_chunks = (count + a.chunk_tokens - 1) / a.chunk_tokens;
    const int32_t first = moe_gpu_block_scan(count, scan) - count;
    const int32_t first_chunk = moe_gpu_block_scan(n_chunks, scan) - n_chunks;
    /* The scans' barriers made header_ok visible. */
    if (e < a.experts)
        a.offsets[e] = first;
    if (e + 1 == a.experts) {
        a.offsets[e + 1] = first + count;
        *a.n_chunks = header_ok ? first_chunk + n_chunks : 0;
        *a.valid = header_ok;
    }
    if (!header_ok || e >= a.experts)
        return;
    /* Even chunk sizes: 5 tokens are 3 + 2, not 4 + 1. */
    int32_t start = first;
    for (int32_t i = 0; i < n_chunks; i++) {
        moe_gpu_chunk ch;
        ch.expert = (int32_t)e;
        ch.first = start;
        ch.count = count / n_chunks + (i < count % n_chunks ? 1 : 0);
        ch.reserved = 0;
        a.chunks[first_chunk + i] = ch;
        start += ch.count;
    }
}

static __global__ void moe_gpu_scatter_kernel(const int32_t *ids, int32_t pairs, uint32_t experts,
                                              const int32_t *offsets, int32_t *fill, int32_t *grouped)
{
    sy_gpu_wait_for_previous_kernel();
    const int32_t p = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (p < pairs && ids[p] >= 0 && (uint32_t)ids[p] < experts)
        grouped[offsets[ids[p]] + atomicAdd(&fill[ids[p]], 1)] = p;
}

/* ------------------------------------------------------------------------------------------ */
/* forward: the expert matrices                                                                */

/* One prepared matrix (w13 or w2) of expert 0; expert e is `e` strides further. */
typedef struct moe_gpu_matrix {
    const uint8_t *blocks, *scales;
    const float *bias;
    const uint8_t *row_top; /* sy_moe_row_top of each tile-order row, expert_bias rows an expert as well */
    uint64_t expert_bytes, expert_scales, expert_bias;
    uint32_t kblocks, kblocks_used; /* blocks a row stored, and blocks a row really has */
} moe_gpu_matrix;

/* One launch of the grouped product: rows of the chunk's expert times the chunk's input rows. */
typedef struct moe_gpu_gemm {
    moe_gpu_matrix m;
    const void *in; /* w13: x rows, one per token; w2: act rows, one per pair */
    int32_t in_dtype;
    uint32_t in_pair_divisor; /* input row of pair p: p / divisor (top_k for x, 1 for act) */
    int64_t in_stride;        /* elements between input rows */
    const int32_t *grouped;   /* pairs grouped by expert */
    const moe_gpu_chunk *chunks;
    const int32_t *n_chunks;
    float *out; /* [pairs][out_rows] */
    uint32_t out_rows;        /* w13: intermediate I (act columns); w2: hidden H */
    uint32_t gate_up_layout, inter_padded;
    float alpha, limit;
    /* The tensor-core product (CUDA) only: */
    int64_t in_lo_offset; /* two-plane input: bytes from a row's high parts to its low parts; 0: one plane */
    /* Input row r was staged times 2^(MOE_MMA_INPUT_EXP - e_r) (moe_mxfp4_gpu_mma.cuh, "Exactness"): e_r is
     * in_exp[r], or in_exp_fixed for every row where in_exp is NULL. */
    const int32_t *in_exp;
    int32_t in_exp_fixed;
    /* w13: act_exp > 0: act as w2's input, bf16 planes of act * 2^(MOE_MMA_INPUT_EXP - act_exp) (the SwiGLU
     * bounds |act| under 2^act_exp, moe_gpu_act_exponent), the high parts at out_hi and the low parts
     * out_lo_offset elements further (0: one plane, act rounded to bf16); act_exp 0: act as f32 rows
     * at out, for moe_gpu_stage_kernel. */
    int32_t act_exp;
    float act_scale; /* 2^(MOE_MMA_INPUT_EXP - act_exp) */
    uint16_t *out_hi;
    int64_t out_lo_offset;
} moe_gpu_gemm;

/* E2M1 code `q` of `word` (bits 4q..4q+3) as the f32 e2m1 * 2^-126 (see the file's comment). */
static __device__ __forceinline__ float moe_gpu_e2m1_tiny(uint32_t word, int q)
{
    const uint32_t code = word >> (4 * q);
    return sy_f32_from_bits(((code & 8u) << 28) | ((code & 7u) << 22));
}

static __device__ __forceinline__ float moe_gpu_swiglu(float g, float u, float alpha, float limit)
{
    g = g > limit ? limit : g;
    u = u > limit ? limit : (u < -limit ? -limit : u);
    return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
}

/* v * 2^s, exact but for the one rounding of a result that is subnormal or overflows, as ldexpf
 * gives it, in one or two multiplies: 2^s for s <= 127, 2^127 and 2^(s - 127) up to 254; ldexpf
 * past those (where one multiply by 2^-126 and another could round twice). */
typedef struct moe_gpu_pow2 {
    float first, second;
    int s;
} moe_gpu_pow2;

static __device__ __forceinline__ moe_gpu_pow2 moe_gpu_pow2_of(int s)
{
    const int first = s > 127 ? 127 : s < -126 ? -126 : s;
    return moe_gpu_pow2{ldexpf(1.0f, first), ldexpf(1.0f, s - first), s};
}

static __device__ __forceinline__ float moe_gpu_times_pow2(float v, moe_gpu_pow2 p)
{
    return p.s >= -126 && p.s <= 254 ? v * p.first * p.second : ldexpf(v, p.s);
}

static __device__ __noinline__ float moe_gpu_ldexpf(float v, int e)
{
    return ldexpf(v, e);
}

/* v * 2^e for the tensor-core product's epilogue (a row's top and a column's staging exponent,
 * -371 .. 159): one multiply where 2^e is a normal float, built from its bits; the rest out of
 * line, so that the epilogue stays small. The staging's MOE_MMA_INPUT_EXP - e (up to 244) takes
 * moe_gpu_times_pow2 instead, its factors worked out once a row: one helper for both, with the
 * second multiply inline, measured 8192 tokens 11.40 -> 11.67 ms (H200, one run). */
static __device__ __forceinline__ float moe_gpu_scale_back(float v, int e)
{
    return e >= -126 && e <= 127 ? v * __int_as_float((e + 127) << 23) : moe_gpu_ldexpf(v, e);
}

/* The CTA's share of one chunk: MOE_GPU_TILES tiles of the expert's matrix (blockIdx.y picks which)
 * times the chunk's MT input rows, over all used blocks of K. Thread (row, column) reads block
 * columns column, column + 16, ... of row `row` of every tile, 16 bytes at a time. */
template <bool W13, int MT>
static __device__ __forceinline__ void moe_gpu_gemm_chunk(const moe_gpu_gemm &a, const moe_gpu_chunk &ch,
                                                          float *smem)
{
    const int tid = (int)threadIdx.x, row = tid % MOE_GPU_TILE_ROWS, column = tid / MOE_GPU_TILE_ROWS;
    const uint32_t e = (uint32_t)ch.expert, group = blockIdx.y;
    const moe_gpu_matrix &m = a.m;

    /* Byte offsets inside the expert's blocks and scales of this thread's row of each tile at
     * block 0: both layout formulas add a row part and a block part with no carry between them,
     * so block j is at block_base + 256 j and its scale at scale_base + sy_moe_scale_offset(0, j). */
    const uint8_t *blocks = m.blocks + e * m.expert_bytes;
    const uint8_t *scales = m.scales + e * m.expert_scales;
    uint32_t block_base[MOE_GPU_TILES], scale_base[MOE_GPU_TILES];
    bool live[MOE_GPU_TILES];
#pragma unroll
    for (int r = 0; r < MOE_GPU_TILES; r++) {
        uint32_t first_row; /* tile-order row of the tile's first row */
        if (W13) {
            /* Tiles 0, 1: gate rows i0 .. i0 + 31; tiles 2, 3: the up rows of the same indices. */
            const uint32_t logical = (uint32_t)(r / 2) * a.inter_padded + group * MOE_GPU_W13_INDICES +
                                     (uint32_t)(r % 2) * MOE_GPU_TILE_ROWS;
            first_row = sy_moe_w13_tile_row(a.gate_up_layout, logical, a.inter_padded);
            live[r] = true;
        } else {
            first_row = group * MOE_GPU_W2_ROWS + (uint32_t)r * MOE_GPU_TILE_ROWS;
            live[r] = first_row < a.out_rows;
        }
        block_base[r] = (uint32_t)sy_moe_block_offset(first_row + (uint32_t)row, 0, m.kblocks);
        scale_base[r] = (uint32_t)sy_moe_scale_offset(first_row + (uint32_t)row, 0, m.kblocks);
    }
    const size_t in_elem = a.in_dtype == SY_DTYPE_BF16 ? 2 : 4;
    float acc[MOE_GPU_TILES][MT];
#pragma unroll
    for (int r = 0; r < MOE_GPU_TILES; r++)
#pragma unroll
        for (int t = 0; t < MT; t++)
            acc[r][t] = 0.0f;

    const uint32_t kb = m.kblocks_used, k_used = kb * SY_MXFP4_BLOCK;
    for (uint32_t j0 = 0; j0 < kb; j0 += MOE_GPU_STAGE_BLOCKS) {
        __syncthreads(); /* the previous stage is consumed */
#pragma unroll
        for (int t = 0; t < MT; t++) {
            const char *in_row = (const char *)a.in + (int64_t)(a.grouped[ch.first + t] / (int32_t)a.in_pair_divisor) *
                                                          a.in_stride * (int64_t)in_elem;
            for (int kk = tid; kk < MOE_GPU_STAGE_BLOCKS * SY_MXFP4_BLOCK; kk += MOE_GPU_THREADS) {
                const uint32_t k = j0 * SY_MXFP4_BLOCK + (uint32_t)kk;
                const float v = k < k_used ? moe_gpu_load_f32_or_bf16(in_row, a.in_dtype, k) : 0.0f;
                smem[t * MOE_GPU_STAGE_FLOATS + (kk / SY_MXFP4_BLOCK) * MOE_GPU_STAGE_STRIDE + kk % SY_MXFP4_BLOCK] =
                    v * 0x1p64f;
            }
        }
        __syncthreads();
#pragma unroll 1
        for (int step = 0; step < MOE_GPU_STAGE_BLOCKS / MOE_GPU_COLUMNS; step++) {
            const int staged = step * MOE_GPU_COLUMNS + column;
            const uint32_t j = j0 + (uint32_t)staged;
            if (j >= kb)
                break;
            uint4 raw[MOE_GPU_TILES];
            float scale[MOE_GPU_TILES];
            const uint32_t block_step = j * MOE_GPU_TILE_ROWS * SY_MXFP4_BLOCK_BYTES;
            const uint32_t scale_step = (uint32_t)sy_moe_scale_offset(0, j, m.kblocks);
#pragma unroll
            for (int r = 0; r < MOE_GPU_TILES; r++) {
                if (live[r]) {
                    raw[r] = *(const uint4 *)(blocks + block_base[r] + block_step);
                    scale[r] = sy_e8m0_to_f32(scales[scale_base[r] + scale_step]);
                } else {
                    raw[r] = make_uint4(0u, 0u, 0u, 0u);
                    scale[r] = 0.0f;
                }
            }
            float block_sum[MOE_GPU_TILES][MT];
#pragma unroll
            for (int r = 0; r < MOE_GPU_TILES; r++)
#pragma unroll
                for (int t = 0; t < MT; t++)
                    block_sum[r][t] = 0.0f;
            const float *xs = smem + staged * MOE_GPU_STAGE_STRIDE;
            /* Not unrolled: one word's inputs live at a time (unrolled, the compiler hoists all four). */
#pragma unroll 1
            for (int w = 0; w < 4; w++) {
                float xv[MT][8];
#pragma unroll
                for (int t = 0; t < MT; t++) {
                    const float4 lo = *(const float4 *)(xs + t * MOE_GPU_STAGE_FLOATS + 8 * w);
                    const float4 hi = *(const float4 *)(xs + t * MOE_GPU_STAGE_FLOATS + 8 * w + 4);
                    xv[t][0] = lo.x;
                    xv[t][1] = lo.y;
                    xv[t][2] = lo.z;
                    xv[t][3] = lo.w;
                    xv[t][4] = hi.x;
                    xv[t][5] = hi.y;
                    xv[t][6] = hi.z;
                    xv[t][7] = hi.w;
                }
#pragma unroll
                for (int r = 0; r < MOE_GPU_TILES; r++) {
                    const uint32_t word = w == 0 ? raw[r].x : w == 1 ? raw[r].y : w == 2 ? raw[r].z : raw[r].w;
#pragma unroll
                    for (int q = 0; q < 8; q++) {
                        const float wq = moe_gpu_e2m1_tiny(word, q);
#pragma unroll
                        for (int t = 0; t < MT; t++)
                            block_sum[r][t] = fmaf(xv[t][q], wq, block_sum[r][t]);
                    }
                }
            }
#pragma unroll
            for (int r = 0; r < MOE_GPU_TILES; r++)
#pragma unroll
                for (int t = 0; t < MT; t++)
                    acc[r][t] = fmaf(block_sum[r][t] * 0x1p62f, scale[r], acc[r][t]);
        }
    }

    /* Column partials to shared memory, then one thread per (tile, token, row) adds the 16 columns
     * in order. */
    __syncthreads();
#pragma unroll
    for (int r = 0; r < MOE_GPU_TILES; r++)
#pragma unroll
        for (int t = 0; t < MT; t++)
            smem[((r * MT + t) * MOE_GPU_TILE_ROWS + row) * MOE_GPU_REDUCE_STRIDE + column] = acc[r][t];
    __syncthreads();
    const int tiles_out = W13 ? MOE_GPU_TILES / 2 : MOE_GPU_TILES;
    if (tid >= tiles_out * MT * MOE_GPU_TILE_ROWS)
        return;
    const int r = tid / (MT * MOE_GPU_TILE_ROWS), t = (tid / MOE_GPU_TILE_ROWS) % MT, out_row = tid % MOE_GPU_TILE_ROWS;
    const int32_t pair = a.grouped[ch.first + t];
    float sum[2] = {0.0f, 0.0f};
    for (int half = 0; half < (W13 ? 2 : 1); half++) {
        const float *part =
            smem + (((r + half * (MOE_GPU_TILES / 2)) * MT + t) * MOE_GPU_TILE_ROWS + out_row) * MOE_GPU_REDUCE_STRIDE;
        for (int col = 0; col < MOE_GPU_COLUMNS; col++)
            sum[half] += part[col];
    }
    const float *bias = m.bias + e * m.expert_bias;
    if (W13) {
        const uint32_t i = group * MOE_GPU_W13_INDICES + (uint32_t)r * MOE_GPU_TILE_ROWS + (uint32_t)out_row;
        a.out[(int64_t)pair * a.out_rows + i] =
            moe_gpu_swiglu(sum[0] + bias[i], sum[1] + bias[a.inter_padded + i], a.alpha, a.limit);
    } else {
        const uint32_t n = group * MOE_GPU_W2_ROWS + (uint32_t)r * MOE_GPU_TILE_ROWS + (uint32_t)out_row;
        if (n < a.out_rows)
            a.out[(int64_t)pair * a.out_rows + n] = sum[0] + bias[n];
    }
}

template <bool W13>
static __global__ void __launch_bounds__(MOE_GPU_THREADS, 2) moe_gpu_gemm_kernel(moe_gpu_gemm a)
{
    alignas(16) __shared__ float smem[MOE_GPU_SMEM_FLOATS];
    if ((int32_t)blockIdx.x >= *a.n_chunks)
        return;
    const moe_gpu_chunk ch = a.chunks[blockIdx.x];
    /* The chunk's token count is uniform over the CTA: each count gets its own unrolled body. */
    switch (ch.count) {
    case 1: moe_gpu_gemm_chunk<W13, 1>(a, ch, smem); break;
    case 2: moe_gpu_gemm_chunk<W13, 2>(a, ch, smem); break;
    case 3: moe_gpu_gemm_chunk<W13, 3>(a, ch, smem); break;
    default: moe_gpu_gemm_chunk<W13, MOE_GPU_TOKENS>(a, ch, smem); break;
    }
}

/* out[t][n] = sum over j < k of weights[t][j] * y[t*k + j][n], in j order, rounded once. A prepared
 * buffer that failed the plan's header check, or an expert id out of range, gives NaN. */
static __global__ void moe_gpu_combine_kernel(const float *y, uint32_t hidden, const int32_t *ids,
                                              const float *weights, uint32_t k, uint32_t experts,
                                              const int32_t *valid, void *out, int32_t out_dtype, int64_t out_stride)
{
    sy_gpu_wait_for_previous_kernel();
    const int64_t t = blockIdx.x;
    bool ok = *valid != 0;
    for (uint32_t j = 0; j < k; j++)
        ok = ok && ids[t * k + j] >= 0 && (uint32_t)ids[t * k + j] < experts;
    /* Columns across blockIdx.y too (moe_gpu_columns_grid), so that a thread's k loads are all it waits on. */
    for (uint32_t n = blockIdx.y * blockDim.x + threadIdx.x; n < hidden; n += gridDim.y * blockDim.x) {
        float acc = 0.0f;
        for (uint32_t j = 0; j < k; j++)
            acc += weights[t * k + j] * y[(t * k + j) * hidden + n];
        if (!ok)
            acc = sy_f32_from_bits(0x7FC00000u);
        if (out_dtype == SY_DTYPE_BF16)
            ((uint16_t *)out)[t * out_stride + n] = sy_f32_to_bf16(acc);
        else
            ((float *)out)[t * out_stride + n] = acc;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* forward: host side                                                                          */

/* Device scratch of one pass over at most `pairs` routed pairs. */
typedef struct moe_gpu_scratch {
    int32_t *counts, *fill, *offsets, *n_chunks, *valid, *grouped;
    moe_gpu_chunk *chunks;
    float *act, *y;
    size_t count_bytes; /* counts and fill, cleared before each pass */
    /* CUDA: the slice's x as the product takes it and each row's exponent (moe_gpu_stage_kernel);
     * where the SwiGLU has no bound, act staged likewise (act then holds f32 rows). */
    uint16_t *x_planes, *act_planes;
    int32_t *x_exp, *act_exp;
} moe_gpu_scratch;

#if SY_MOE_TENSOR_CORES
#include "moe_mxfp4_gpu_mma.cuh"
enum { MOE_GPU_CHUNK_TOKENS = MOE_MMA_TOKENS }; /* the smallest chunk size a call plans */
#else
enum { MOE_GPU_CHUNK_TOKENS = MOE_GPU_TOKENS };
#endif

/* Pairs of one chunk for a call of `pairs` routed pairs, every pass of it. */
static int32_t moe_gpu_chunk_tokens(int64_t pairs, uint32_t experts)
{
#if SY_MOE_TENSOR_CORES
    return moe_mma_chunk_tokens(pairs, experts);
#else
    (void)pairs, (void)experts;
    return MOE_GPU_TOKENS;
#endif
}

/* Whether the device of `host`'s backend runs this build's warpgroup product (sy_wgmma_runs_on).
 * A backend that does not say gets the mma.sync product, which every tensor-core device runs. */
static bool moe_gpu_warpgroup_runs(const sy_host_api *host)
{
#if SY_MOE_TENSOR_CORES
    if (!host || !host->backend || !host->backend->device_info)
        return false;
    sy_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    sy_error ignored;
    return host->backend->device_info(host->backend_ctx, &info, &ignored) == SY_OK &&
           sy_wgmma_runs_on(info.cc_major, info.cc_minor);
#else
    (void)host;
    return false;
#endif
}

/* At most one chunk an expert is partly filled. */
static size_t moe_gpu_max_chunks(uint32_t pairs, uint32_t experts, int32_t chunk_tokens)
{
    return (pairs + (uint32_t)chunk_tokens - 1) / (uint32_t)chunk_tokens + experts;
}

#if SY_MOE_TENSOR_CORES
/* Row blockIdx.x of `in` (x, or act where the SwiGLU has no bound) as the tensor-core product's
 * input [rows][cols]: 16-byte aligned rows in the order of the product that takes them
 * (sy_e2m1_input_slot: warpgroup or mma.sync), times 2^(MOE_MMA_INPUT_EXP - e) (moe_mxfp4_gpu_mma.cuh), where 2^e is the first power of
 * two above the row's largest finite magnitude (e = 0 for a row of zeros). bf16 rows as one bf16
 * plane (exact), f32 rows as two, the high parts at hi and the bf16 of the remainders `plane`
 * elements further, or as one (rounded to bf16) where `plane` is 0. e goes to row_exp for the product's epilogue. One block a row, each thread MOE_GPU_STAGE_PER elements of a pass loaded
 * at once and kept for the writes where the row is one pass (H200, gpt-oss's 2880: a loop of one
 * load at a time took 8.4 us at 128 rows). */
enum { MOE_GPU_STAGE_PER = 12 };

static __global__ void __launch_bounds__(MOE_GPU_SIMPLE_THREADS)
    moe_gpu_stage_kernel(const void *in, int32_t dtype, int64_t in_stride, uint32_t cols, bool warpgroup, uint16_t *hi,
                         size_t plane, int32_t *row_exp)
{
    __shared__ float scratch[SY_MAX_WARPS_PER_BLOCK];
    sy_gpu_wait_for_previous_kernel();
    const int64_t row = (int64_t)blockIdx.x * in_stride;
    const uint32_t pass = MOE_GPU_STAGE_PER * blockDim.x;
    float v[MOE_GPU_STAGE_PER];
    const auto load = [&](uint32_t c0) {
#pragma unroll
        for (int j = 0; j < MOE_GPU_STAGE_PER; j++) {
            const uint32_t i = c0 + (uint32_t)j * blockDim.x + threadIdx.x;
            v[j] = i < cols ? moe_gpu_load_f32_or_bf16(in, dtype, (uint64_t)(row + i)) : 0.0f;
        }
    };
    float largest = 0.0f;
    for (uint32_t c0 = 0; c0 < cols; c0 += pass) {
        load(c0);
#pragma unroll
        for (int j = 0; j < MOE_GPU_STAGE_PER; j++)
            if (fabsf(v[j]) <= FLT_MAX) /* not inf, not NaN: those stay what they are, scaled or not */
                largest = fmaxf(largest, fabsf(v[j]));
    }
    largest = sy_block_max(largest, scratch);
    int e = 0;
    if (largest > 0.0f)
        (void)frexpf(largest, &e);
    const moe_gpu_pow2 scale = moe_gpu_pow2_of(MOE_MMA_INPUT_EXP - e);
    uint16_t *out = hi + (size_t)blockIdx.x * cols;
    for (uint32_t c0 = 0; c0 < cols; c0 += pass) {
        if (cols > pass)
            load(c0);
#pragma unroll
        for (int j = 0; j < MOE_GPU_STAGE_PER; j++) {
            const uint32_t i = c0 + (uint32_t)j * blockDim.x + threadIdx.x;
            if (i >= cols)
                break;
            const uint32_t at = sy_e2m1_input_slot(i, warpgroup);
            const float y = moe_gpu_times_pow2(v[j], scale);
            if (dtype == SY_DTYPE_F32 && plane)
                sy_mma_split_bf16_one(y, &out[at], &out[plane + at]);
            else
                out[at] = sy_f32_to_bf16(y);
        }
    }
    if (threadIdx.x == 0)
        row_exp[blockIdx.x] = e;
}

/* The exponent e of a bound 2^e on |act| that the SwiGLU's clamp guarantees, or 0 where it has none
 * (alpha <= 0, a limit that is not finite) or one too large to stage by.
 *   g >= 0: |g sigmoid(alpha g)| <= g <= |limit|; g < 0: |g| / (1 + e^(alpha |g|)) < 1 / (e alpha);
 *   |u + 1| <= |limit| + 1,
 * times 2 for the f32 rounding of the exponential and the products. */
static int32_t moe_gpu_act_exponent(float alpha, float limit)
{
    if (!(alpha > 0.0f) || !isfinite(alpha) || !isfinite(limit))
        return 0;
    const double l = fabs((double)limit), bound = (l + 1.0 / (2.718281828459045 * (double)alpha)) * (l + 1.0) * 2.0;
    int e = 0;
    (void)frexp(bound, &e);
    return e >= 1 && e <= 120 ? e : 0;
}

#endif

/* The grouped product of one matrix over every chunk: tensor cores on CUDA, CUDA cores on HIP. */
template <bool W13>
static sy_status moe_gpu_launch_product(const moe_gpu_gemm &g, int32_t chunk_tokens, bool warpgroup,
                                        unsigned max_chunks, gpuStream_t gs, sy_error *err)
{
#if SY_MOE_TENSOR_CORES
    return g.in_lo_offset ? moe_mma_launch<W13, true>(g, chunk_tokens, warpgroup, max_chunks, gs, err)
                          : moe_mma_launch<W13, false>(g, chunk_tokens, warpgroup, max_chunks, gs, err);
#else
    (void)chunk_tokens, (void)warpgroup;
    const unsigned slices = W13 ? g.out_rows / MOE_GPU_W13_INDICES : (g.out_rows + MOE_GPU_W2_ROWS - 1) / MOE_GPU_W2_ROWS;
    SY_GPU_LAUNCH(dim3(max_chunks, slices), MOE_GPU_THREADS, 0, gs, moe_gpu_gemm_kernel<W13>)(g);
    SY_GPU_CHECK_LAUNCH(err, W13 ? "moe grouped product (w13)" : "moe grouped product (w2)");
    return SY_OK;
#endif
}

/* Tokens a pass of the forward takes (MOE_GPU_PASS_EXPERT_PAIRS): at least one. */
static int64_t moe_gpu_pass_tokens(const sy_moe_dims *d, uint32_t k)
{
    uint64_t pairs = (uint64_t)d->experts * MOE_GPU_PASS_EXPERT_PAIRS;
    const uint64_t fit = MOE_GPU_PASS_MAX_BYTES / (sizeof(float) * ((uint64_t)d->hidden + d->intermediate));
    pairs = pairs < MOE_GPU_PASS_MAX_PAIRS ? pairs : (uint64_t)MOE_GPU_PASS_MAX_PAIRS;
    pairs = pairs < fit ? pairs : fit;
    return pairs >= k ? (int64_t)(pairs / k) : 1;
}

static sy_status moe_gpu_reserve(moe_gpu_ctx *c, const sy_moe_dims *d, uint32_t pairs, uint32_t x_plane_rows,
                                 bool stage_act, moe_gpu_scratch *s, sy_error *err)
{
    const size_t E = d->experts;
    enum { REGIONS = 11 };
    const size_t sizes[REGIONS] = {sizeof(int32_t) * 2 * E,
                                   sizeof(int32_t) * (E + 1),
                                   sizeof(int32_t) * 2,
                                   sizeof(moe_gpu_chunk) * moe_gpu_max_chunks(pairs, d->experts, MOE_GPU_CHUNK_TOKENS),
                                   sizeof(int32_t) * pairs,
                                   sizeof(float) * pairs * d->intermediate,
                                   sizeof(float) * pairs * d->hidden,
                                   sizeof(uint16_t) * 2 * x_plane_rows * d->hidden,
                                   sizeof(int32_t) * x_plane_rows,
                                   stage_act ? sizeof(uint16_t) * 2 * pairs * d->intermediate : 0,
                                   stage_act ? sizeof(int32_t) * pairs : 0};
    size_t off[REGIONS], total = 0;
    for (int i = 0; i < REGIONS; i++) {
        off[i] = total;
        total += sy_gpu_workspace_align(sizes[i]);
    }
    void *base = NULL;
    sy_status st = sy_gpu_workspace_reserve(&c->ws, "moe forward", total, &base, err);
    if (st != SY_OK)
        return st;
    char *b = (char *)base;
    s->counts = (int32_t *)(b + off[0]);
    s->fill = s->counts + E;
    s->count_bytes = sizes[0];
    s->offsets = (int32_t *)(b + off[1]);
    s->n_chunks = (int32_t *)(b + off[2]);
    s->valid = s->n_chunks + 1;
    s->chunks = (moe_gpu_chunk *)(b + off[3]);
    s->grouped = (int32_t *)(b + off[4]);
    s->act = (float *)(b + off[5]);
    s->y = (float *)(b + off[6]);
    s->x_planes = (uint16_t *)(b + off[7]);
    s->x_exp = (int32_t *)(b + off[8]);
    s->act_planes = stage_act ? (uint16_t *)(b + off[9]) : NULL;
    s->act_exp = stage_act ? (int32_t *)(b + off[10]) : NULL;
    return SY_OK;
}

static sy_status moe_gpu_check_forward(const moe_gpu_ctx *c, const sy_moe_forward_args *a, sy_moe_dims *d,
                                       sy_error *err)
{
    static const char op[] = "moe forward";
    sy_status st = sy_moe_mxfp4_check_call(op, c, 1, a, a ? a->struct_size : 0u, sizeof *a, "sy_moe_forward_args",
                                           a ? &a->shape : NULL, err);
    if (st == SY_OK)
        st = moe_gpu_check_prepared(op, a->prepared, err);
    if (st != SY_OK)
        return st;
    const sy_moe_shape *s = &a->shape;
    *d = sy_moe_dims_of(s->num_experts, s->hidden, s->intermediate);
    return sy_moe_mxfp4_check_forward_tensors(op, a, err);
}

static moe_gpu_matrix moe_gpu_matrix_of(const uint8_t *base, const sy_moe_dims *d, const sy_moe_sections *sec,
                                        int w13)
{
    moe_gpu_matrix m;
    m.blocks = base + (w13 ? sec->w13_blocks : sec->w2_blocks);
    m.scales = base + (w13 ? sec->w13_scales : sec->w2_scales);
    m.bias = (const float *)(base + (w13 ? sec->w13_bias : sec->w2_bias));
    m.row_top = base + (w13 ? sec->w13_row_top : sec->w2_row_top);
    m.expert_bytes = w13 ? sec->w13_expert_bytes : sec->w2_expert_bytes;
    m.expert_scales = w13 ? sec->w13_expert_scales : sec->w2_expert_scales;
    m.expert_bias = w13 ? 2u * (uint64_t)d->intermediate_padded : d->hidden_padded;
    m.kblocks = (w13 ? d->hidden_padded : d->intermediate_padded) / SY_MXFP4_BLOCK;
    m.kblocks_used = (w13 ? d->hidden : d->intermediate) / SY_MXFP4_BLOCK;
    return m;
}

extern "C" sy_status sy_moe_mxfp4_gpu_forward(void *ctx, sy_stream stream, const sy_moe_forward_args *a, sy_error *err)
{
    moe_gpu_ctx *c = (moe_gpu_ctx *)ctx;
    sy_moe_dims d = sy_moe_dims_of(0, 0, 0);
    sy_status st = moe_gpu_check_forward(c, a, &d, err);
    if (st != SY_OK)
        return st;
    const int64_t T = a->x.shape[0];
    if (T == 0)
        return SY_OK;
    const uint32_t k = a->shape.top_k, E = d.experts;
    const int64_t pass_tokens = moe_gpu_pass_tokens(&d, k);
    const uint32_t max_tokens = (uint32_t)(T < pass_tokens ? T : pass_tokens), max_pairs = max_tokens * k;
#if SY_MOE_TENSOR_CORES
    const bool stage_x = true; /* the tensor-core product takes x staged (moe_gpu_stage_kernel) */
    const int32_t act_exp = moe_gpu_act_exponent(a->shape.swiglu_alpha, a->shape.swiglu_limit);
#else
    const bool stage_x = false; /* HIP's CUDA-core product reads x as it is */
    const int32_t act_exp = 0;
#endif
    moe_gpu_scratch s;
    st = moe_gpu_reserve(c, &d, max_pairs, stage_x ? max_tokens : 0u, stage_x && act_exp == 0, &s, err);
    if (st != SY_OK)
        return st;

    const gpuStream_t gs = sy_gpu_stream(stream);
    const uint8_t *base = (const uint8_t *)a->prepared;
    const sy_moe_sections sec = sy_moe_sections_of(&d);
    const size_t x_elem = sy_dtype_size(a->x.dtype), out_elem = sy_dtype_size(a->out.dtype);
    /* A single row's stride is free in the tensor view. */
    const int64_t x_stride = T == 1 ? a->x.shape[1] : a->x.stride[0];
    const int64_t out_stride = T == 1 ? (int64_t)d.hidden : a->out.stride[0];

    moe_gpu_plan plan;
    plan.header = (const sy_moe_prepared_header *)(base + sec.header);
    plan.expected = moe_gpu_header_of(&d, c->gate_up_layout);
    plan.counts = s.counts;
    plan.offsets = s.offsets;
    plan.chunks = s.chunks;
    plan.n_chunks = s.n_chunks;
    plan.valid = s.valid;
    plan.experts = E;
    plan.chunk_tokens = moe_gpu_chunk_tokens(T * k, E);
#if SY_MOE_TENSOR_CORES
    /* the inputs' order and the product that reads them: one choice for the whole call */
    const bool warpgroup = c->warpgroup && plan.chunk_tokens > MOE_MMA_TOKENS;
#else
    const bool warpgroup = false;
#endif

    moe_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.grouped = s.grouped;
    g.chunks = s.chunks;
    g.n_chunks = s.n_chunks;
    g.gate_up_layout = c->gate_up_layout;
    g.inter_padded = d.intermediate_padded;
    g.alpha = a->shape.swiglu_alpha;
    g.limit = a->shape.swiglu_limit;

    for (int64_t t0 = 0; t0 < T; t0 += pass_tokens) {
        const int64_t tokens = T - t0 < pass_tokens ? T - t0 : pass_tokens;
        const int32_t pairs = (int32_t)(tokens * k);
        const int32_t *ids = (const int32_t *)a->topk_ids.data + t0 * k;
        const float *weights = (const float *)a->topk_weights.data + t0 * k;
        const unsigned pair_blocks = (unsigned)((pairs + MOE_GPU_SIMPLE_THREADS - 1) / MOE_GPU_SIMPLE_THREADS);
        const unsigned max_chunks = (unsigned)moe_gpu_max_chunks((uint32_t)pairs, E, plan.chunk_tokens);

        SY_GPU_CHECKF(err, gpuMemsetAsync(s.counts, 0, s.count_bytes, gs), "for the expert counts");
        /* An ordinary launch: what comes before it on the stream is the memset, not a kernel. */
        SY_GPU_LAUNCH(pair_blocks, MOE_GPU_SIMPLE_THREADS, 0, gs, moe_gpu_count_kernel)(ids, pairs, E, s.counts);
        SY_GPU_CHECK_LAUNCH(err, "moe_gpu_count_kernel");
        SY_GPU_LAUNCH_CHAINED(1, MOE_GPU_PLAN_THREADS, 0, gs, moe_gpu_plan_kernel)(plan);
        SY_GPU_CHECK_LAUNCH(err, "moe_gpu_plan_kernel");
        SY_GPU_LAUNCH_CHAINED(pair_blocks, MOE_GPU_SIMPLE_THREADS, 0, gs, moe_gpu_scatter_kernel)(
            ids, pairs, E, s.offsets, s.fill, s.grouped);
        SY_GPU_CHECK_LAUNCH(err, "moe_gpu_scatter_kernel");

        g.m = moe_gpu_matrix_of(base, &d, &sec, 1);
        g.in = (const char *)a->x.data + t0 * x_stride * (int64_t)x_elem;
        g.in_dtype = a->x.dtype;
        g.in_pair_divisor = k;
        g.in_stride = x_stride;
        g.out = s.act;
        g.out_rows = d.intermediate;
        g.in_lo_offset = 0;
#if SY_MOE_TENSOR_CORES
        {
            const size_t plane = (size_t)max_tokens * d.hidden;
            SY_GPU_LAUNCH_CHAINED((unsigned)tokens, MOE_GPU_SIMPLE_THREADS, 0, gs, moe_gpu_stage_kernel)(
                g.in, a->x.dtype, x_stride, d.hidden, warpgroup, s.x_planes, plane, s.x_exp);
            SY_GPU_CHECK_LAUNCH(err, "moe_gpu_stage_kernel (x)");
            g.in = s.x_planes;
            g.in_dtype = SY_DTYPE_BF16;
            g.in_stride = d.hidden;
            g.in_lo_offset = a->x.dtype == SY_DTYPE_F32 ? (int64_t)(plane * sizeof(uint16_t)) : 0;
            g.in_exp = s.x_exp;
        }
        g.act_exp = act_exp;
        g.act_scale = ldexpf(1.0f, MOE_MMA_INPUT_EXP - act_exp);
#endif
        g.out_hi = (uint16_t *)s.act;
        /* bf16 x: act enters w2 as one bf16 plane, rounded once as the gpt-oss reference rounds it
         * (docs/conformance.md's moe bf16 class), which halves w2's products; f32 x: two planes. */
        g.out_lo_offset = a->x.dtype == SY_DTYPE_BF16 ? 0 : (int64_t)max_pairs * d.intermediate;
        st = moe_gpu_launch_product<true>(g, plan.chunk_tokens, warpgroup, max_chunks, gs, err);
        if (st != SY_OK)
            return st;

        g.m = moe_gpu_matrix_of(base, &d, &sec, 0);
        g.in = s.act;
        g.in_dtype = SY_DTYPE_F32;
        g.in_pair_divisor = 1;
        g.in_stride = d.intermediate;
        g.out = s.y;
        g.out_rows = d.hidden;
#if SY_MOE_TENSOR_CORES
        /* The act planes: rows of a multiple of 32 bf16 from an aligned allocation, written by w13
         * (times the fixed 2^(MOE_MMA_INPUT_EXP - act_exp)) or staged from its f32 rows here. */
        g.in_dtype = SY_DTYPE_BF16;
        g.in_lo_offset = g.out_lo_offset * (int64_t)sizeof(uint16_t);
        g.in_exp = NULL;
        g.in_exp_fixed = act_exp;
        if (act_exp == 0) {
            SY_GPU_LAUNCH_CHAINED((unsigned)pairs, MOE_GPU_SIMPLE_THREADS, 0, gs, moe_gpu_stage_kernel)(
                s.act, SY_DTYPE_F32, d.intermediate, d.intermediate, warpgroup, s.act_planes, g.out_lo_offset, s.act_exp);
            SY_GPU_CHECK_LAUNCH(err, "moe_gpu_stage_kernel (act)");
            g.in = s.act_planes;
            g.in_exp = s.act_exp;
        }
#endif
        st = moe_gpu_launch_product<false>(g, plan.chunk_tokens, warpgroup, max_chunks, gs, err);
        if (st != SY_OK)
            return st;

        SY_GPU_LAUNCH_CHAINED(moe_gpu_columns_grid(tokens, d.hidden), MOE_GPU_SIMPLE_THREADS, 0, gs, moe_gpu_combine_kernel)(
            s.y, d.hidden, ids, weights, k, E, s.valid, (char *)a->out.data + t0 * out_stride * (int64_t)out_elem,
            a->out.dtype, out_stride);
        SY_GPU_CHECK_LAUNCH(err, "moe_gpu_combine_kernel");
    }
    return SY_OK;
}

/* Host pass only: hipcc would otherwise emit this external const table, with its host function
 * pointers, into the device code too. */
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
extern "C" const sy_moe_ops sy_moe_mxfp4_gpu_ops = {
    sizeof(sy_moe_ops),         0, sy_moe_mxfp4_prepared_bytes, sy_moe_mxfp4_gpu_prepare, sy_moe_mxfp4_gpu_route,
    sy_moe_mxfp4_gpu_forward,
};
#endif

#endif
