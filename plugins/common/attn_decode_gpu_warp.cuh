/* Decode attention on NVIDIA tensor cores with every warp streaming its own key tiles: the kernel
 * for the common decode shape (bf16 or fp8 K/V, head dim 64 or 128, pages holding whole 64-key
 * tiles, 16-byte aligned rows), in both layouts. Other calls take attn_decode_gpu.cuh's kernel.
 *
 * Why. The block-wide kernel of attn_decode_gpu.cuh runs each tile's softmax across the block
 * (four barriers a tile, the scores through shared memory), so its warps wait on each other more
 * than on memory: 55% of copy bandwidth at 128 x 8192. Here each warp owns one item, a (split,
 * KV head and chunk of 8 of its q heads, sequence), and keeps its online softmax in registers; a
 * block is just 4 such warps (consecutive items: the splits or heads of one sequence), and no
 * barrier of the block is ever taken. A warp's tiles come through its own ring of STAGES
 * shared-memory stages filled by cp.async, so STAGES - 1 tiles are in flight while it computes.
 * Parallelism comes from items alone: the host picks the splits so that the items fill the
 * device's warp slots in as few waves as the keys allow (attn_paged/gpu.cu), and a split's
 * partial goes to attn_decode_gpu.cuh's combine kernel.
 *
 * Products (mma.sync m16n8k16, bf16 in, f32 accumulate; fragments in mma_bf16_cuda.cuh), the
 * flash-attention-2 arrangement with the block's GQA group of 8 q heads as rows 0-7 of M = 16
 * (rows 8-15 are zero; the tensor cores have time to spare in decode, the memory has not):
 *   QK  S[head][key] = Q[head][dim] K^T[dim][key]: q as A fragments in registers for the call,
 *       K as B fragments from the stage with ldmatrix;
 *   PV  O[head][dim] += P[head][key] V[key][dim]: the probabilities stay in registers, the C
 *       fragment of S being the A fragment of P; V as B fragments with ldmatrix (.trans for nhd,
 *       whose stage holds [key][dim] rows; vectorized_5d V arrives as [dim][key] rows already).
 * Operands. bf16 K/V: bf16 products, q as bf16 (an f32 q as bf16 high and low planes, two QK
 * products), P rounded to bf16 once (about 2^-9 relative per probability, inside the bf16 attention
 * bound of docs/conformance.md, as in the prefill kernel). fp8 K/V: f16 products, since every e4m3
 * value is an f16 and sm_89 converts a pair in one instruction (sy_e4m3x2_to_f16x2), where widening
 * to bf16 took most of the kernel's instructions; P in f16 (2^-11 relative); q in f16 after a
 * power-of-two scale per head that puts its largest element in [2^14, 2^15), so that no q
 * overflows f16 and only elements under 2^-38 of the largest lose bits (an f32 q again as two
 * planes), the scale folded back into the head's score scale.
 *
 * fp8 order. ldmatrix moves 16-bit elements, so an fp8 fragment register arrives holding 4
 * consecutive bytes: dims 4c .. 4c+3 of a K row (lane 4g + c), keys 4c .. 4c+3 of a vectorized_5d
 * V row. A contraction may take its k index in any order that both operands share, so for fp8 the
 * k-step's logical positions 2c, 2c+1 are the bytes 4c, 4c+1 and 2c+8, 2c+9 the bytes 4c+2, 4c+3:
 * q's A fragments take their dims in that order, and the keys of S are ordered so that the
 * C fragment of a thread holds keys 4c .. 4c+3 of each 16-key step (the key_of rule below), which
 * is what vectorized_5d V hands it. nhd fp8 V rows are read with ldmatrix .trans as 8 x 8 matrices
 * of byte pairs: a register holds 2 keys x 2 dims, and a byte permute splits it into the dims' key
 * pairs; its PV n-tiles are then the even and odd dims of a 16-dim chunk (out_dim below).
 *
 * Shared memory. A stage is TILE keys of K then of V, 4 KB each (2 KB for fp8), in 16-byte units:
 * nhd as [key][unit] rows placed by an XOR swizzle (swizzled_unit) so that the 8 rows of every
 * ldmatrix matrix and the 8 units of a cp.async quarter-warp land in distinct bank groups;
 * vectorized_5d in the pool's own unit order (k_unit, v5d_unit), which keeps every 32-byte sector
 * whole on its way in. Keys outside the split's [lo, hi) are zero-filled by
 * cp.async, except in vectorized_5d V units that mix valid and invalid keys, which are cleared after
 * they arrive: invalid rows must be zero, not merely weighted by p = 0, since the pool past a
 * sequence's length may hold anything (0 * NaN is NaN).
 *
 * m runs in base 2 (exp2 of pre-scaled scores) and leaves the kernel in base e. */
#ifndef SY_ATTN_DECODE_GPU_WARP_CUH
#define SY_ATTN_DECODE_GPU_WARP_CUH

#include <math.h>
#include <stdint.h>

#include "attn_core_gpu.cuh"
#include "cp_async_cuda.cuh"
#include "gpu_runtime.h"
#include "mma_bf16_cuda.cuh"

enum { SY_ATTN_DECODE_WARPS = 4 /* warps (items) a block */ };

template <int LAYOUT, int KV, int D, bool QPLANES>
struct sy_attn_warp_shape {
    static constexpr int WARPS = SY_ATTN_DECODE_WARPS, THREADS = 32 * WARPS, DIMS = D;
    static constexpr int Q_PLANES = QPLANES ? 2 : 1; /* an f32 q as bf16 high and low planes */
    static constexpr int ES = sy_elem_size<KV>;
    static constexpr bool FP8 = KV == SY_DTYPE_FP8_E4M3;
    static constexpr bool V5D = LAYOUT == SY_LAYOUT_VECTORIZED_5D;
    static constexpr int VEC = 16 / ES;               /* elements of a 16-byte unit (X of vectorized_5d) */
    /* Measured on the H200 at 128 x 8192 (docs/performance.md): bf16 runs at the DRAM ceiling
     * with stages of 4 KB of K and of V and 2 blocks an SM; fp8 has twice the keys a byte, so
     * twice the instructions, and needs more warps in flight: stages of 2 KB, 4 blocks an SM (at
     * most 128 registers), 287 us against 360 us with the bf16 shape. Head dim 128 keeps 2 blocks
     * (its accumulators spill under 128 registers). */
    static constexpr int STAGES = 3;
    /* vectorized_5d steps each lane's copies from a base fixed for the call and reads a tile's page
     * from the table a tile ahead (sy_attn_warp_pool): on the H200 its fp8 decode went 290 -> 253 us
     * at 128 x 8192. nhd computes every copy's address from the tile and looks its page up when it
     * loads: the stepped form took nhd fp8 284 -> 298 us, the page read ahead -> 318 us (at 4 blocks
     * an SM its 128 registers spill the extra state). */
    static constexpr bool STEPPED = V5D;
    static constexpr int BLOCKS_PER_SM = FP8 && D == 64 ? 4 : 2;
    static constexpr int TENSOR_BYTES = FP8 ? 2048 : 4096;
    static constexpr int TILE_BY_BYTES = TENSOR_BYTES / (D * ES); /* keys a stage, 16 to 64 */
    static constexpr int TILE = TILE_BY_BYTES < 16 ? 16 : TILE_BY_BYTES > SY_ATTN_DECODE_TILE ? SY_ATTN_DECODE_TILE : TILE_BY_BYTES;
    static constexpr int ROW_UNITS = D / VEC;         /* units of a [key][dim] row */
    static constexpr int UNITS = TILE * ROW_UNITS;    /* units of one tensor's tile */
    static constexpr int PER_LANE = UNITS / 32;       /* of them, cp.async'd by each lane */
    static constexpr int TILE_BYTES = UNITS * 16;
    static constexpr int STAGE_BYTES = 2 * TILE_BYTES;
    static constexpr int WARP_BYTES = STAGES * STAGE_BYTES;
    static constexpr int SMEM_BYTES = WARPS * WARP_BYTES;
    static constexpr int KEY_TILES = TILE / 8; /* QK n-tiles */
    static constexpr int KSTEPS = D / 16;      /* QK k-steps */
    static constexpr int PSTEPS = TILE / 16;   /* PV k-steps */
    static constexpr int DIM_TILES = D / 8;    /* PV n-tiles */
    static constexpr int HEADS = 8;            /* q heads a block: rows 0-7 of the products */
    static_assert(D == 64 || D == 128, "head dims of the tiles");
    static_assert(KV == SY_DTYPE_BF16 || KV == SY_DTYPE_FP8_E4M3, "bf16 or fp8 K/V");
    static_assert(TILE % 16 == 0 && SY_ATTN_DECODE_TILE % TILE == 0, "stages tile the 64-key split spans");
    static_assert(UNITS % 32 == 0 && ROW_UNITS % 4 == 0 && DIM_TILES % 4 == 0, "whole ldmatrix .x4 loads");
};

/* Unit `unit` of row `row` of a tile whose rows have ROW_UNITS 16-byte units, as a unit index of
 * the stage: units are XORed within their 128-byte line so that 8 consecutive rows at one unit
 * (an ldmatrix matrix) and 8 consecutive units (a quarter-warp's cp.async) hit 8 bank groups. */
template <int ROW_UNITS>
SY_DEV int sy_attn_warp_swizzled_unit(int row, int unit)
{
    if constexpr (ROW_UNITS >= 8)
        return row * ROW_UNITS + (unit ^ (row & 7));
    else
        return row * ROW_UNITS + (unit ^ ((row / (8 / ROW_UNITS)) & (ROW_UNITS - 1)));
}

/* The stage unit of K's 16-byte unit `unit` of key `key` (and of nhd V's, staged alike). nhd:
 * [key][unit] rows, swizzled. vectorized_5d: [unit][key], the pool's own order, so that the two
 * 16-byte halves of every 32-byte sector a warp's cp.async reads land side by side in shared memory:
 * cp.async splits a sector whose halves go to scattered places into two requests (ncu at 128 x
 * 8192: 118.9 M L2 requests of one sector each, 1.77x the compulsory sectors, with the [key][unit]
 * rows nhd uses). An ldmatrix matrix is then 8 keys of one unit; the XOR of key bit 1 by key bit 3
 * keeps those 8 on distinct bank groups for the fp8 key order too (keys 4c .. 4c+1 and +2 of each
 * 16, W::key_of) and keeps sector halves together. */
template <class S>
SY_DEV int sy_attn_warp_k_unit(int key, int unit)
{
    if constexpr (S::V5D)
        return unit * S::TILE + (key ^ (((key >> 3) & 1) << 1));
    else
        return sy_attn_warp_swizzled_unit<S::ROW_UNITS>(key, unit);
}

/* The stage unit of vectorized_5d V's unit `key_unit` (VEC keys) of dim `dim`: [key unit][dim], the
 * pool's order, for the same reason; an ldmatrix matrix is 8 consecutive dims of one key unit. */
template <class S>
SY_DEV int sy_attn_warp_v5d_unit(int dim, int key_unit)
{
    return key_unit * S::DIMS + dim;
}

/* The pair as high parts and the parts of the remainders (an f32 operand as two planes). */
template <bool F16>
SY_DEV void sy_attn_warp_split(float x0, float x1, uint32_t *hi, uint32_t *lo)
{
    if constexpr (F16) {
        *hi = sy_mma_pack_16x2<true>(x0, x1);
        *lo = sy_mma_pack_16x2<true>(x0 - sy_f16_to_f32((uint16_t)(*hi & 0xFFFFu)), x1 - sy_f16_to_f32((uint16_t)(*hi >> 16)));
    } else {
        sy_mma_split_bf16(x0, x1, hi, lo);
    }
}

/* e4m3 bytes (FIRST, FIRST + 2) of `four` as an f16 pair: a .trans register of byte pairs holds
 * 2 keys x 2 dims, and this takes one dim's two keys. */
template <int FIRST>
SY_DEV uint32_t sy_attn_warp_e4m3_keys(uint32_t four)
{
    return sy_e4m3x2_to_f16x2(__byte_perm(four, 0u, FIRST == 0 ? 0x4420u : 0x4431u));
}

template <class S>
struct sy_attn_warp_decode {
    /* The key of QK n-tile `nt`, column n: natural for bf16; for fp8, n-tile 2s + par holds keys
     * 16s + 4(n/2) + n%2 + 2par, so that C fragment column 2c + j is key 16s + 4c + 2par + j. */
    SY_DEV static int key_of(int nt, int n)
    {
        if constexpr (S::FP8)
            return 16 * (nt / 2) + 4 * (n / 2) + n % 2 + 2 * (nt % 2);
        else
            return 8 * nt + n;
    }

    /* The dim of PV n-tile `dt`, column n: natural, except nhd fp8 (.trans of byte pairs), whose
     * n-tile 2ch + par holds the dims 16ch + 2n + par. */
    SY_DEV static int out_dim(int dt, int n)
    {
        if constexpr (S::FP8 && !S::V5D)
            return 16 * (dt / 2) + 2 * n + dt % 2;
        else
            return 8 * dt + n;
    }

    /* The head dim at k-step position k (0..15) of QK k-step ks: natural for bf16; fp8 K registers
     * hold bytes 4c .. 4c+3 for positions 2c, 2c+1, 2c+8, 2c+9. */
    SY_DEV static int q_dim(int ks, int k)
    {
        if constexpr (S::FP8)
            return 16 * ks + 4 * ((k % 8) / 2) + k % 2 + 2 * (k / 8);
        else
            return 16 * ks + k;
    }
};

/* Where a vectorized_5d warp's loads go in the pool (S::STEPPED), in elements: the tile at (page,
 * off) of KV head h starts at page * P*H*D + h * D*P + off * X (K, (H, D/X, P, X) a page) or off * D
 * (V, (H, P/X, D, X)); K unit (c, n) of a tile lies at c*P*X + n*X (n = u % TILE, c = u / TILE) and V
 * unit u at u*X, so lane l's i-th unit is at lane_k(l) + i * step_k (lane_v(l) + i * step_v). */
template <class S>
struct sy_attn_warp_pool {
    static_assert(S::V5D && 32 % S::TILE == 0, "a lane's units step evenly through a vectorized_5d tile");
    uint32_t P, H;
    SY_DEV uint64_t tile(uint32_t page, uint32_t kv_head) const
    {
        return (uint64_t)page * P * H * S::DIMS + (uint64_t)kv_head * S::DIMS * P;
    }
    SY_DEV uint32_t lane_k(uint32_t l) const { return l / S::TILE * P * S::VEC + l % S::TILE * S::VEC; }
    SY_DEV uint32_t step_k() const { return 32u / S::TILE * P * S::VEC; }
    SY_DEV static uint32_t lane_v(uint32_t l) { return l * (uint32_t)S::VEC; }
    static constexpr uint32_t step_v = 32u * S::VEC;
};

/* A warp's stage: K then V, TILE_BYTES each. Loads tile t0 (inside one page) of the split with
 * cp.async; keys outside [lo, hi) are zero-filled where a unit holds one key. FULL: every key of the
 * tile is inside (sy_attn_warp_load picks it), so no unit needs the check. S::STEPPED: the tile's
 * page and offset come in `page` and `off` (read ahead); otherwise they are looked up here. */
template <class S, bool FULL>
SY_DEV void sy_attn_warp_load_as(const sy_attn_gpu_decode &p, const sy_attn_gpu_decode_span &sp, int64_t t0,
                                 uint32_t page, uint32_t off, unsigned char *stage, int lane)
{
    const uint32_t P = p.dims.page_size, H = p.dims.kv_heads;
    if constexpr (!S::STEPPED) {
        page = (uint32_t)sp.table[(uint32_t)t0 / P];
        off = (uint32_t)t0 % P;
    }
    uint64_t k_base, v_base;
    uint32_t k_step = 0;
    if constexpr (S::STEPPED) {
        const sy_attn_warp_pool<S> pool{P, H};
        const uint64_t tile = pool.tile(page, sp.kv_head);
        k_step = pool.step_k();
        k_base = tile + (uint64_t)off * S::VEC + pool.lane_k((uint32_t)lane);
        v_base = tile + (uint64_t)off * S::DIMS + pool.lane_v((uint32_t)lane);
    } else {
        k_base = sy_kv_k_row_at(&p.dims, page, off, sp.kv_head).base;
        v_base = sy_kv_v_row_at(&p.dims, page, off, sp.kv_head).base;
    }
    const char *kc = (const char *)p.k_cache + k_base * S::ES, *vc = (const char *)p.v_cache + v_base * S::ES;
    unsigned char *k_stage = stage, *v_stage = stage + S::TILE_BYTES;
    const int first = (int)(sp.lo > t0 ? sp.lo - t0 : 0), last = (int)(sp.hi - t0 < S::TILE ? sp.hi - t0 : S::TILE);
#pragma unroll
    for (int i = 0; i < S::PER_LANE; i++) {
        const int u = lane + 32 * i;
        /* K, and nhd V: key n, unit c of its row. vectorized_5d K runs hold X dims of P keys. */
        const int n = S::V5D ? u % S::TILE : u / S::ROW_UNITS, c = S::V5D ? u / S::TILE : u % S::ROW_UNITS;
        const bool in = FULL || (n >= first && n < last);
        const uint64_t k_elem = S::STEPPED ? (uint64_t)i * k_step : (uint64_t)((uint32_t)n * H * S::DIMS + (uint32_t)c * S::VEC);
        const int dst = sy_attn_warp_k_unit<S>(n, c) * 16;
        sy_cp_async16(k_stage + dst, kc + k_elem * S::ES, in ? 16 : 0);
        if constexpr (S::V5D) {
            /* V: group j of X keys of dim d, at its unit of the [key unit][dim] tile. */
            const int j = u / S::DIMS, d = u % S::DIMS;
            const bool any = FULL || (j * S::VEC + S::VEC > first && j * S::VEC < last);
            sy_cp_async16(v_stage + sy_attn_warp_v5d_unit<S>(d, j) * 16,
                          vc + (uint64_t)i * sy_attn_warp_pool<S>::step_v * S::ES, any ? 16 : 0);
        } else {
            sy_cp_async16(v_stage + dst, vc + k_elem * S::ES, in ? 16 : 0);
        }
    }
}

/* Most tiles lie inside their split, and the checks are a good part of a tile's instructions. */
template <class S>
SY_DEV void sy_attn_warp_load(const sy_attn_gpu_decode &p, const sy_attn_gpu_decode_span &sp, int64_t t0,
                              uint32_t page, uint32_t off, unsigned char *stage, int lane)
{
    if (t0 >= sp.lo && t0 + S::TILE <= sp.hi)
        sy_attn_warp_load_as<S, true>(p, sp, t0, page, off, stage, lane);
    else
        sy_attn_warp_load_as<S, false>(p, sp, t0, page, off, stage, lane);
}

/* vectorized_5d V of a tile that starts or ends inside its X-key units: the loaded values of the
 * keys outside [first, last) cleared (see the file's comment). The warp's copies have landed. */
template <class S>
SY_DEV void sy_attn_warp_clear_v(unsigned char *v_stage, int first, int last, int lane)
{
    for (int i = lane; i < S::DIMS * S::TILE; i += 32) {
        const int d = i / S::TILE, n = i % S::TILE;
        if (n >= first && n < last)
            continue;
        unsigned char *e = v_stage + sy_attn_warp_v5d_unit<S>(d, n / S::VEC) * 16 + (n % S::VEC) * S::ES;
        if constexpr (S::ES == 2)
            *(uint16_t *)e = 0;
        else
            *e = 0;
    }
}

/* One k-step of QK over a key n-tile: s += q . k for the q planes. */
template <class S>
SY_DEV void sy_attn_warp_qk_step(float (&s)[4], const uint32_t (&q)[S::Q_PLANES][2], uint32_t b0, uint32_t b1)
{
#pragma unroll
    for (int pl = 0; pl < S::Q_PLANES; pl++) {
        const uint32_t a[4] = {q[pl][0], 0u, q[pl][1], 0u};
        sy_mma_16816<S::FP8>(s, a, b0, b1);
    }
}

template <int LAYOUT, int KV, int D, bool QPLANES>
static __global__ __launch_bounds__(32 * SY_ATTN_DECODE_WARPS,
                                    (sy_attn_warp_shape<LAYOUT, KV, D, QPLANES>::BLOCKS_PER_SM)) void
sy_attn_gpu_decode_warp_kernel(const sy_attn_gpu_decode p)
{
    using S = sy_attn_warp_shape<LAYOUT, KV, D, QPLANES>;
    using W = sy_attn_warp_decode<S>;
    constexpr bool F16 = S::FP8;
    /* q and out are f32 exactly when q comes as two planes (the launch picks QPLANES so), else bf16:
     * a constant, so that their per-element loads and stores carry no dtype branch. */
    constexpr int32_t IO = QPLANES ? SY_DTYPE_F32 : SY_DTYPE_BF16;
    SY_GPU_DYNAMIC_SHARED(unsigned char, smem);
    sy_gpu_wait_for_previous_kernel();
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, c = lane % 4;
    unsigned char *ring = smem + warp * S::WARP_BYTES;

    /* This warp's item: (split, KV head and chunk of 8 of its q heads, sequence), splits fastest. */
    const uint32_t rows_per_seq = p.dims.kv_heads * p.head_chunks;
    const uint32_t item = blockIdx.x * S::WARPS + (uint32_t)warp; /* under 2^32 (attn_paged/gpu.cu) */
    if (item >= p.batch * rows_per_seq * p.num_splits)
        return;
    const uint32_t seq_row = item / p.num_splits;
    const sy_attn_gpu_decode_item it = sy_attn_gpu_decode_item_of(p, seq_row / rows_per_seq, item - seq_row * p.num_splits,
                                                                  seq_row % rows_per_seq, S::HEADS);
    const uint32_t b = it.b, split = it.split, n_heads = it.n_heads, head0 = it.head0;
    const sy_attn_gpu_decode_span sp = it.sp;
    const int64_t first = sp.lo / S::TILE * S::TILE;
    const int tiles = sp.lo < sp.hi ? (int)((sp.hi - first + S::TILE - 1) / S::TILE) : 0;
    const auto tile_at = [&](int k) { return first + (int64_t)k * S::TILE; };

    /* S::STEPPED: the tile to load next as (page index in the table, offset in the page), stepped a
     * tile at a time (pages hold whole tiles), its page read from the table a tile ahead of its use,
     * so that the load of the table entry does not stall the warp that issues the tile's copies. */
    const uint32_t P = p.dims.page_size;
    uint32_t load_index = (uint32_t)(first / P), load_off = (uint32_t)(first % P), load_page = 0u;
    const auto read_ahead = [&](int next) {
        if constexpr (S::STEPPED) {
            load_off += S::TILE;
            if (load_off == P) {
                load_off = 0;
                load_index++;
            }
            load_page = next < tiles ? (uint32_t)sp.table[load_index] : 0u;
        }
    };
    if constexpr (S::STEPPED)
        load_page = tiles > 0 ? (uint32_t)sp.table[load_index] : 0u;

    /* The first STAGES - 1 tiles in flight before q is read; one commit group a stage, empty ones
     * too, so that the wait below counts stages. */
#pragma unroll
    for (int k = 0; k < S::STAGES - 1; k++) {
        if (k < tiles) {
            sy_attn_warp_load<S>(p, sp, tile_at(k), load_page, load_off, ring + k * S::STAGE_BYTES, lane);
            read_ahead(k + 1);
        }
        sy_cp_async_commit();
    }

    /* q's A fragments: row g (a head of the block; zeros past n_heads), k positions 2c, 2c+1 and
     * 2c+8, 2c+9 of each k-step (W::q_dim); for f16 products scaled by 2^e_g (file comment). */
    float x[S::KSTEPS][4];
    float q_max = 0.0f;
#pragma unroll
    for (int ks = 0; ks < S::KSTEPS; ks++)
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int pos = 8 * (k / 2) + 2 * c + k % 2;
            x[ks][k] = (uint32_t)g < n_heads ? sy_gpu_load_act(p.c.q, IO,
                                                               (int64_t)b * p.c.q_s0 + (int64_t)(head0 + g) * p.c.q_s1 +
                                                                   W::q_dim(ks, pos))
                                             : 0.0f;
            q_max = fmaxf(q_max, fabsf(x[ks][k]));
        }
    int q_exp = 0;
    if constexpr (F16) {
        q_max = fmaxf(q_max, sy_shfl_xor(q_max, 1));
        q_max = fmaxf(q_max, sy_shfl_xor(q_max, 2));
        if (q_max > 0.0f && q_max <= 3.0e38f) { /* inf / NaN q: left as it is, to reach the output */
            frexpf(q_max, &q_exp);              /* q_max = f 2^q_exp, f in [0.5, 1) */
            q_exp = 15 - q_exp;
        }
    }
    uint32_t q[S::KSTEPS][S::Q_PLANES][2];
#pragma unroll
    for (int ks = 0; ks < S::KSTEPS; ks++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float x0 = ldexpf(x[ks][2 * h], q_exp), x1 = ldexpf(x[ks][2 * h + 1], q_exp);
            if constexpr (QPLANES)
                sy_attn_warp_split<F16>(x0, x1, &q[ks][0][h], &q[ks][1][h]);
            else
                q[ks][0][h] = sy_mma_pack_16x2<F16>(x0, x1);
        }

    /* Scores in base 2: exp2(s' - m) with s' = s log2(e) is e^(s - m ln 2). */
    const float score_scale = ldexpf(p.c.score_scale * 1.44269504088896340736f, -q_exp);
    float m = -INFINITY, l = 0.0f;
    float o[S::DIM_TILES][4];
#pragma unroll
    for (int dt = 0; dt < S::DIM_TILES; dt++)
#pragma unroll
        for (int r = 0; r < 4; r++)
            o[dt][r] = 0.0f;

    for (int k = 0; k < tiles; k++) {
        const int ahead = k + S::STAGES - 1;
        if (ahead < tiles) {
            sy_attn_warp_load<S>(p, sp, tile_at(ahead), load_page, load_off, ring + (ahead % S::STAGES) * S::STAGE_BYTES,
                                 lane);
            read_ahead(ahead + 1);
        }
        sy_cp_async_commit();
        sy_cp_async_wait<S::STAGES - 1>();
        sy_syncwarp();
        const int64_t t0 = tile_at(k);
        const unsigned char *k_stage = ring + (k % S::STAGES) * S::STAGE_BYTES, *v_stage = k_stage + S::TILE_BYTES;
        const int key_lo = (int)(sp.lo > t0 ? sp.lo - t0 : 0), key_hi = (int)(sp.hi - t0 < S::TILE ? sp.hi - t0 : S::TILE);
        if (S::V5D && (key_lo % S::VEC != 0 || key_hi % S::VEC != 0)) {
            sy_attn_warp_clear_v<S>((unsigned char *)v_stage, key_lo, key_hi, lane);
            sy_syncwarp();
        }

        /* QK: one ldmatrix .x4 a key n-tile and 4 units of the K rows (4 k-steps of 16 fp8 dims, or 2
         * of 8 + 8 bf16 dims). */
        float s[S::KEY_TILES][4];
#pragma unroll
        for (int nt = 0; nt < S::KEY_TILES; nt++) {
#pragma unroll
            for (int r = 0; r < 4; r++)
                s[nt][r] = 0.0f;
#pragma unroll
            for (int u4 = 0; u4 < S::ROW_UNITS / 4; u4++) {
                uint32_t kr[4];
                sy_ldmatrix_x4<false>(kr, k_stage + sy_attn_warp_k_unit<S>(W::key_of(nt, lane % 8), 4 * u4 + lane / 8) * 16);
                if constexpr (S::FP8) {
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        sy_attn_warp_qk_step<S>(s[nt], q[4 * u4 + i], sy_e4m3x2_to_f16x2(kr[i]),
                                                sy_e4m3x2_to_f16x2(kr[i] >> 16));
                } else {
                    sy_attn_warp_qk_step<S>(s[nt], q[2 * u4], kr[0], kr[1]);
                    sy_attn_warp_qk_step<S>(s[nt], q[2 * u4 + 1], kr[2], kr[3]);
                }
            }
        }

        /* Online softmax of row g over this lane's columns (2c, 2c+1 of each n-tile), the row max
         * shared by the 4 lanes of the row. */
        float tile_max = -INFINITY;
        if (key_lo == 0 && key_hi == S::TILE) { /* the common whole tile: no key to mask */
#pragma unroll
            for (int nt = 0; nt < S::KEY_TILES; nt++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    s[nt][j] *= score_scale;
                    tile_max = fmaxf(tile_max, s[nt][j]);
                }
        } else {
#pragma unroll
            for (int nt = 0; nt < S::KEY_TILES; nt++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const int key = W::key_of(nt, 2 * c + j);
                    s[nt][j] = key >= key_lo && key < key_hi ? s[nt][j] * score_scale : -INFINITY;
                    tile_max = fmaxf(tile_max, s[nt][j]);
                }
        }
        tile_max = fmaxf(tile_max, sy_shfl_xor(tile_max, 1));
        tile_max = fmaxf(tile_max, sy_shfl_xor(tile_max, 2));
        const float m_new = fmaxf(m, tile_max);
        /* Every tile holds a key of the split, so m_new is finite once a tile is seen. */
        const float alpha = exp2f(m - m_new);
        m = m_new;
        l *= alpha;
#pragma unroll
        for (int dt = 0; dt < S::DIM_TILES; dt++) {
            o[dt][0] *= alpha;
            o[dt][1] *= alpha;
        }
        uint32_t pa[S::KEY_TILES]; /* P of row g, this lane's 2 columns of each n-tile, as bf16 */
#pragma unroll
        for (int nt = 0; nt < S::KEY_TILES; nt++) {
            const float p0 = exp2f(s[nt][0] - m_new), p1 = exp2f(s[nt][1] - m_new);
            l += p0 + p1;
            pa[nt] = sy_mma_pack_16x2<F16>(p0, p1);
        }

        /* PV: k-step ps takes P's n-tiles 2ps and 2ps + 1 as A registers 0 and 2. */
#pragma unroll
        for (int ps = 0; ps < S::PSTEPS; ps++) {
            const uint32_t a[4] = {pa[2 * ps], 0u, pa[2 * ps + 1], 0u};
            if constexpr (S::FP8 && S::V5D) {
                /* [dim][key] rows of 16 keys a unit: a register is keys 4c .. 4c+3 of dim g. */
#pragma unroll
                for (int d4 = 0; d4 < S::DIM_TILES / 4; d4++) {
                    uint32_t vr[4];
                    sy_ldmatrix_x4<false>(vr, v_stage + sy_attn_warp_v5d_unit<S>(8 * (4 * d4 + lane / 8) + lane % 8, ps) * 16);
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        sy_mma_f16(o[4 * d4 + i], a, sy_e4m3x2_to_f16x2(vr[i]), sy_e4m3x2_to_f16x2(vr[i] >> 16));
                }
            } else if constexpr (S::FP8) {
                /* [key][dim] rows read .trans as byte pairs: matrix i holds keys 16ps + 4(r/2) + r%2 +
                 * 2(i%2) of chunk 2cp + i/2; a register is 2 keys x dims 2g, 2g+1. */
#pragma unroll
                for (int cp = 0; cp < S::ROW_UNITS / 2; cp++) {
                    uint32_t vr[4];
                    const int i = lane / 8, r = lane % 8;
                    sy_ldmatrix_x4<true>(vr, v_stage + sy_attn_warp_k_unit<S>(16 * ps + 4 * (r / 2) + r % 2 + 2 * (i % 2),
                                                                                      2 * cp + i / 2) * 16);
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const uint32_t lo = vr[2 * h], hi = vr[2 * h + 1];
                        sy_mma_f16(o[2 * (2 * cp + h)], a, sy_attn_warp_e4m3_keys<0>(lo), sy_attn_warp_e4m3_keys<0>(hi));
                        sy_mma_f16(o[2 * (2 * cp + h) + 1], a, sy_attn_warp_e4m3_keys<1>(lo), sy_attn_warp_e4m3_keys<1>(hi));
                    }
                }
            } else {
                /* bf16: matrix i is the 8 keys 16ps + 8(i%2) .. of dim tile 2dp + i/2, from [key][dim]
                 * rows (.trans) or [dim][key] rows. */
#pragma unroll
                for (int dp = 0; dp < S::DIM_TILES / 2; dp++) {
                    uint32_t vr[4];
                    const int i = lane / 8, r = lane % 8;
                    if constexpr (S::V5D)
                        sy_ldmatrix_x4<false>(vr, v_stage + sy_attn_warp_v5d_unit<S>(8 * (2 * dp + i / 2) + r, 2 * ps + i % 2) * 16);
                    else
                        sy_ldmatrix_x4<true>(vr, v_stage + sy_attn_warp_k_unit<S>(16 * ps + 8 * (i % 2) + r, 2 * dp + i / 2) * 16);
                    sy_mma_bf16(o[2 * dp], a, vr[0], vr[1]);
                    sy_mma_bf16(o[2 * dp + 1], a, vr[2], vr[3]);
                }
            }
        }
        /* The stage is refilled by a later iteration's cp.async: every lane's reads come first. */
        sy_syncwarp();
    }
    sy_cp_async_wait<0>();
    l += sy_shfl_xor(l, 1);
    l += sy_shfl_xor(l, 2);

    /* The output of row g (one split), or the split's partial. */
    if ((uint32_t)g >= n_heads)
        return;
    const uint32_t head = head0 + (uint32_t)g;
    const float m_nat = m * 0.69314718055994530942f;
    const float *sink = p.c.sinks ? &p.c.sinks[(int64_t)head * p.c.sinks_s0] : NULL;
    const sy_attn_gpu_norm norm = sy_attn_gpu_norm_of(m_nat, l, sink);
    const uint64_t part = ((uint64_t)b * p.dims.kv_heads * p.group + head) * p.num_splits + split;
#pragma unroll
    for (int dt = 0; dt < S::DIM_TILES; dt++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int d = W::out_dim(dt, 2 * c + j);
            if (p.num_splits == 1)
                sy_gpu_store_act(p.c.out, IO, (int64_t)b * p.c.out_s0 + (int64_t)head * p.c.out_s1 + d,
                                 sy_attn_gpu_normalized(norm, o[dt][j]) * p.c.out_scale);
            else
                p.part_acc[part * S::DIMS + d] = o[dt][j];
        }
    if (p.num_splits > 1 && c == 0) {
        p.part_ml[2 * part] = m_nat;
        p.part_ml[2 * part + 1] = l;
    }
}

/* Whether the warp-streaming kernel takes a call: bf16 or fp8 K/V whose tiles lie in one page and
 * whose rows are whole aligned 16-byte units of head dim 64 or 128. */
static inline bool sy_attn_gpu_decode_warp_takes(const sy_attn_gpu_decode &p, int32_t kv_dtype)
{
    return (kv_dtype == SY_DTYPE_BF16 || kv_dtype == SY_DTYPE_FP8_E4M3) && p.tiles_in_page && p.row_aligned &&
           (p.dims.head_dim == 64 || p.dims.head_dim == 128);
}

/* Past 48 KB of shared memory a kernel must opt in, once per device: the plugin's init does it for
 * every instantiation (sy_attn_gpu_decode_warp_opt_in), so that a launch costs the host nothing
 * more than the launch (a call of 20 us is otherwise bounded by the host's enqueue rate). */
template <int LAYOUT, int KV, int D, bool QPLANES>
static sy_status sy_attn_gpu_decode_warp_opt_in_as(sy_error *err)
{
#if defined(SY_VENDOR_CUDA)
    using S = sy_attn_warp_shape<LAYOUT, KV, D, QPLANES>;
    SY_GPU_CHECKF(err,
                  cudaFuncSetAttribute(sy_attn_gpu_decode_warp_kernel<LAYOUT, KV, D, QPLANES>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES),
                  "for %d bytes of shared memory", S::SMEM_BYTES);
#else
    (void)err;
#endif
    return SY_OK;
}

template <int LAYOUT, int KV>
static sy_status sy_attn_gpu_decode_warp_opt_in_kv(sy_error *err)
{
    sy_status st;
    if ((st = sy_attn_gpu_decode_warp_opt_in_as<LAYOUT, KV, 64, false>(err)) != SY_OK ||
        (st = sy_attn_gpu_decode_warp_opt_in_as<LAYOUT, KV, 64, true>(err)) != SY_OK ||
        (st = sy_attn_gpu_decode_warp_opt_in_as<LAYOUT, KV, 128, false>(err)) != SY_OK)
        return st;
    return sy_attn_gpu_decode_warp_opt_in_as<LAYOUT, KV, 128, true>(err);
}

static inline sy_status sy_attn_gpu_decode_warp_opt_in(sy_error *err)
{
    sy_status st;
    if ((st = sy_attn_gpu_decode_warp_opt_in_kv<SY_LAYOUT_NHD, SY_DTYPE_BF16>(err)) != SY_OK ||
        (st = sy_attn_gpu_decode_warp_opt_in_kv<SY_LAYOUT_NHD, SY_DTYPE_FP8_E4M3>(err)) != SY_OK ||
        (st = sy_attn_gpu_decode_warp_opt_in_kv<SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16>(err)) != SY_OK)
        return st;
    return sy_attn_gpu_decode_warp_opt_in_kv<SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3>(err);
}

template <int LAYOUT, int KV, int D, bool QPLANES>
static sy_status sy_attn_gpu_decode_warp_launch_as(const sy_attn_gpu_decode &p, dim3 grid, gpuStream_t stream)
{
    using S = sy_attn_warp_shape<LAYOUT, KV, D, QPLANES>;
    SY_GPU_LAUNCH_CHAINED(grid, S::THREADS, S::SMEM_BYTES, stream, sy_attn_gpu_decode_warp_kernel<LAYOUT, KV, D, QPLANES>)(p);
    return SY_OK;
}

template <int LAYOUT, int KV>
static sy_status sy_attn_gpu_decode_warp_launch_kv(const sy_attn_gpu_decode &p, dim3 grid, gpuStream_t stream)
{
    const bool planes = p.c.io_dtype == SY_DTYPE_F32;
    if (p.dims.head_dim == 64)
        return planes ? sy_attn_gpu_decode_warp_launch_as<LAYOUT, KV, 64, true>(p, grid, stream)
                      : sy_attn_gpu_decode_warp_launch_as<LAYOUT, KV, 64, false>(p, grid, stream);
    return planes ? sy_attn_gpu_decode_warp_launch_as<LAYOUT, KV, 128, true>(p, grid, stream)
                  : sy_attn_gpu_decode_warp_launch_as<LAYOUT, KV, 128, false>(p, grid, stream);
}

/* grid: ceil(items / 4) blocks, items = B x Hkv x head chunks of 8 x splits. */
static inline sy_status sy_attn_gpu_decode_warp_launch(const sy_attn_gpu_decode &p, int32_t kv_dtype, dim3 grid,
                                                       gpuStream_t stream)
{
    if (p.dims.layout == SY_LAYOUT_VECTORIZED_5D)
        return kv_dtype == SY_DTYPE_BF16
                   ? sy_attn_gpu_decode_warp_launch_kv<SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16>(p, grid, stream)
                   : sy_attn_gpu_decode_warp_launch_kv<SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3>(p, grid, stream);
    return kv_dtype == SY_DTYPE_BF16 ? sy_attn_gpu_decode_warp_launch_kv<SY_LAYOUT_NHD, SY_DTYPE_BF16>(p, grid, stream)
                                     : sy_attn_gpu_decode_warp_launch_kv<SY_LAYOUT_NHD, SY_DTYPE_FP8_E4M3>(p, grid, stream);
}

#endif
