/* Prefill attention on NVIDIA tensor cores for bf16 K/V whose rows are 16-byte aligned (CUDA
 * builds, and tests/gpu's emulator at warp 32; fp8 and f32 K/V, unaligned rows and the HIP build
 * keep the CUDA-core kernel of attn_prefill_gpu.cuh, whose query tiles, block order and row
 * ranges this shares).
 *
 * The flash-attention-2 structure (Dao, "FlashAttention-2", 2023, section 3): a block of 4 warps
 * owns ROWS (query, q head) rows of one KV head, each warp 16 or 32 of them as one or two m-tiles
 * of mma m16n8k16 (fragments in mma_bf16_cuda.cuh), and walks the key tiles of the rows' union
 * range, 64 or 128 keys a tile, two tiles in flight with cp.async and one barrier a tile. q is
 * staged once through shared memory (copied there with cp.async where the warpgroup products run
 * and q allows) and read into A fragments with ldmatrix. Per tile a warp
 * computes
 *   S = Q K^T      q's fragments in registers for the whole call, K's from the shared tile with
 *                  ldmatrix (K rows are the k-major B as stored), k-steps outermost;
 *   online softmax on S in registers: a row's 64 scores sit in the 4 lanes of a quad, so its max
 *                  is two shuffles; the max is taken of the raw products and each probability
 *                  is one FMA (the scale, in log2 units) and one ex2;
 *   O += P V       the probabilities rounded to bf16 become A fragments without leaving the
 *                  registers (an m16n8 accumulator pair is an m16k16 A fragment), V's B fragments
 *                  come from the [key][dim] tile with ldmatrix .trans;
 *   l += P 1       (warpgroup products) the rows' sums of the same bf16 P, as one more product
 *                  with a B of ones (an n-tile of 8 equal columns): the sums come with O's
 *                  accumulation instead of 32 adds a lane a tile and two shuffles a row, and O
 *                  and l weigh the keys alike; mma.sync kernels add the f32 P in registers.
 * Rows of one block are queries i0 .. i0 + ROWS / gc of gc q heads (as the CUDA-core kernel), so a
 * causal block spans few queries and one K/V tile serves all gc heads. Only tiles that cross a
 * row's [lo, hi) are masked. Two variants (sy_attn_prefill_mma_shape): LONG for rows of many keys,
 * the other for rows of few, whose blocks' fixed cost dominates.
 *
 * On an sm_90 device with sm_90a code, calls of head dim 64 with bf16 q run the 64-key variant
 * with its products on the warpgroup tensor cores, whatever their rows' length (wgmma,
 * wgmma_bf16_cuda.cuh; the FlashAttention-3 paper's first step: Shah et al., 2024, section 3):
 * the block's 4 warps are one warpgroup and its 64 rows one m64 product, S = Q K^T with q's A
 * fragments read from shared memory every tile and K's tile as the K-major B, O += P V with P's A
 * fragments packed from S and V's tile as the N-major B; K/V tiles are stored 128-byte swizzled
 * (sy_attn_gpu_prefill_mma_launch has the measurements), except a vectorized_5d pool's, which keep
 * its order and are read as K-major core matrices (sy_prefill_k_offset); tiles whose keys all exist
 * come by TMA (tma_cuda.cuh): linear rows' and nhd pages' as boxes, the 128-byte swizzle written by
 * the copy itself, vectorized_5d pages' of 64 keys as two plain bulk copies of a head's blocks.
 *
 * Numerics: K, V and bf16 q enter as they are; an f32 q enters as bf16 high and low parts (two
 * products, QPLANES), which keeps the scores within f32 rounding. The probabilities enter as
 * bf16 (one product), so the output carries their 2^-9 rounding, averaged over the keys (about
 * 2e-4 relative L2 in check_kv_attn, against 5e-5 for the CUDA-core kernel), inside the bf16
 * attention bound of the conformance tolerances (4e-3), which every K/V this kernel takes is held
 * to. The denominator sums the unrounded probabilities.
 *
 * Speed on mma.sync (H200, gpt-oss shapes, causal with sinks): 1 x 8192 in 2.02-2.16 ms,
 * 255-275 TFLOP/s (LONG; the CUDA-core kernel: 23.8 ms); 8 x 2048 1.27-1.31 ms; window 128:
 * 218-235 us (1 x 8192), 434-436 us (8 x 2048).
 * ncu (1 x 8192, two m-tiles a warp at 2 blocks an SM): each warp waits on its own mma, max and
 * exp chains (issue slots 40% busy, "wait" the first stall reason): more warps and more
 * independent work a warp are what the variants trade for. */
#ifndef SY_ATTN_PREFILL_GPU_MMA_CUH
#define SY_ATTN_PREFILL_GPU_MMA_CUH

#include <float.h>
#include <stdint.h>

#include <type_traits>

#include "cp_async_cuda.cuh"
#include "gpu_runtime.h"
#include "mma_bf16_cuda.cuh"
#include "tma_cuda.cuh"
#include "wgmma_bf16_cuda.cuh"

extern "C" {
#include "sy_op_check.h"
}

/* Rows that see at least this many keys on average take the LONG variant where it exists, if its
 * blocks make at least SY_ATTN_PREFILL_MMA_LONG_WAVES waves. Measured on the H200 (gpt-oss
 * shapes, causal; one process, twice each): 1 x 8192 (4096 keys a row, 21 waves) 2.02 / 2.13 ms
 * LONG, 2.14 / 2.14 ms with two m-tiles a warp, 2.26 / 2.26 ms the other variant;
 * 8 x 2048 (1024 keys) 1.32 ms LONG, 1.28 ms not; window 128: 309 / 219 us; a 512-query chunk
 * over 4096 cached keys (4352 keys a row, but 512 blocks: 1.3 waves) 191 us LONG, 162 us not.
 * Between 1.3 and 21 waves nothing is measured: 2 is a guess that the longest-first order keeps
 * the last wave's imbalance small. */
#define SY_ATTN_PREFILL_MMA_LONG_KEYS 2048
#define SY_ATTN_PREFILL_MMA_LONG_WAVES 2

/* Both variants give a warp one m-tile (16 rows) and keep two tiles in flight. LONG (head dim 64,
 * bf16 q only: elsewhere the registers do not allow it) walks tiles of 128 keys at 3 blocks an SM
 * (168 registers): twice the independent products between two softmax steps, and half the
 * barriers, maxima and rescales a key. The other walks tiles of 64 keys, at 4 blocks an SM at head
 * dim 64 with bf16 q: more warps to hide a block's fixed cost (q, the first tiles' latency, the
 * finish), which dominates rows of few keys, and less of a 64-key window's tiles wasted. Measured
 * and not kept for long rows: two m-tiles a warp (32 rows sharing each K and V fragment, 253
 * registers, 2 blocks an SM, three stages; above). */
template <int DMAX, bool QPLANES, bool LONG, bool ASYNC = false>
struct sy_attn_prefill_mma_shape {
    static constexpr int DIMS = DMAX;
    static constexpr bool WARPGROUP = ASYNC;
    static_assert(!ASYNC || (!LONG && DMAX == 64 && !QPLANES && SY_ATTN_GPU_THREADS == 128),
                  "the warpgroup products take the 64-key variant: one warpgroup a block, bf16 q and K/V rows of one "
                  "128-byte swizzle width");
    static constexpr int WARPS = SY_ATTN_GPU_THREADS / 32;
    static constexpr bool SMALL_ROWS = DMAX == 64 && !QPLANES;
    static_assert(!LONG || SMALL_ROWS, "the LONG variant is head dim 64 with bf16 q");
    static constexpr int MT = 1;                         /* m-tiles a warp */
    static constexpr int MIN_BLOCKS = SMALL_ROWS ? (LONG ? 3 : 4) : 2; /* blocks an SM the registers must allow */
    static constexpr int ROWS = WARPS * 16 * MT;     /* (query, head) rows of a block */
    static constexpr int KT = LONG ? 128 : 64;       /* keys of a tile */
    static constexpr int NT = KT / 8;                /* QK n-tiles of 8 keys */
    static constexpr int KS = DMAX / 16;             /* QK k-steps over the head dim */
    static constexpr int DT = DMAX / 8;              /* PV n-tiles of 8 dims */
    /* q's staging rows, and K/V's rows for ldmatrix: the 16 bytes of pad make ldmatrix's 8 rows hit
     * all banks. The warpgroup products read K/V rows of 128 bytes swizzled instead (the pieces of
     * 8 rows on 8 different bank groups), from tiles aligned to the swizzle's 1024 bytes. */
    static constexpr int Q_ROW_BYTES = DMAX * 2 + 16;
    static constexpr int KV_ROW_BYTES = ASYNC ? DMAX * 2 : DMAX * 2 + 16;
    static constexpr int TILE_BYTES = KT * KV_ROW_BYTES;
    static constexpr int STAGES = 2;                   /* tiles in flight */
    static constexpr int STAGE_BYTES = 2 * TILE_BYTES; /* a stage: K's tile, then V's */
    static constexpr int ALIGN_SLACK = ASYNC ? 1024 : 0; /* dynamic shared memory is only 16-byte aligned */
    /* The warpgroup products keep q's tile in shared memory for the call, past the ring, and read
     * its A fragments again every tile; mma.sync holds them in registers and stages q in the ring. */
    /* ... and a 1024-byte tile of bf16 ones past q's, the B of the products that sum P's rows. */
    static constexpr int ONES_OFFSET = STAGES * STAGE_BYTES + (ASYNC ? ROWS * Q_ROW_BYTES : 0);
    static constexpr int ONES_BYTES = ASYNC ? 1024 : 0;
    /* ... and the stages' barriers, for tiles that come by TMA */
    static constexpr int BARS_OFFSET = ONES_OFFSET + ONES_BYTES;
    static constexpr int BARS_BYTES = ASYNC ? 8 * STAGES : 0;
    static constexpr int SMEM_BYTES = BARS_OFFSET + BARS_BYTES + ALIGN_SLACK;
    static constexpr int PIECES = KT * DMAX / 8;       /* 16-byte pieces of one tensor's tile */
    static constexpr int PER_THREAD = PIECES / SY_ATTN_GPU_THREADS;
    static constexpr int Q_PLANES = QPLANES ? 2 : 1;   /* q's bf16 tiles: (hi, lo) for f32 */
    static constexpr int Q_PLANE_BYTES = ROWS * Q_ROW_BYTES;
    static constexpr int Q_PER_THREAD = ROWS * (DMAX / 8) / SY_ATTN_GPU_THREADS; /* 8-dim pieces of q */
    static_assert(PIECES % SY_ATTN_GPU_THREADS == 0 && KS % 2 == 0 && NT % 2 == 0 && DT % 2 == 0, "whole x4 loads");
    static_assert(Q_PLANES * Q_PLANE_BYTES <= STAGE_BYTES && Q_PER_THREAD * SY_ATTN_GPU_THREADS == ROWS * (DMAX / 8),
                  "q's tiles fit one stage, in whole pieces a thread");
    static_assert(!ASYNC || (TILE_BYTES % 1024 == 0 && ONES_OFFSET % 1024 == 0), "every K and V tile, and the ones, on a swizzle boundary");

    /* Byte offset of the 16-byte piece `piece` (dims 8 piece ..) of key `key` in a K or V tile. */
    static SY_DEV constexpr int kv_offset(int key, int piece)
    {
        return ASYNC ? sy_wgmma_sw128_offset(key, piece) : key * KV_ROW_BYTES + piece * 16;
    }
};

/* Whether a call takes the LONG variant: not where the warpgroup products run (`warpgroup`: they
 * take the 64-key variant); head dim bucket 64, bf16 q, and rows that see at least
 * SY_ATTN_PREFILL_MMA_LONG_KEYS on average and rows (queries x q heads) for at least
 * SY_ATTN_PREFILL_MMA_LONG_WAVES waves of its blocks on `sms` multiprocessors. */
static inline bool sy_attn_gpu_prefill_mma_long(int dmax, int32_t q_dtype, double mean_keys, double rows, uint32_t sms,
                                                bool warpgroup)
{
    using L = sy_attn_prefill_mma_shape<64, false, true>;
    if (warpgroup || dmax != 64 || q_dtype == SY_DTYPE_F32)
        return false;
    return mean_keys >= SY_ATTN_PREFILL_MMA_LONG_KEYS &&
           rows / L::ROWS >= (double)SY_ATTN_PREFILL_MMA_LONG_WAVES * L::MIN_BLOCKS * sms;
}

/* Rows of a block of the tensor-core kernel for head dim bucket dmax (64 or 128), q's dtype and
 * the variant. */
static inline uint32_t sy_attn_gpu_prefill_mma_rows(int dmax, int32_t q_dtype, bool long_rows)
{
    /* the grid is sized before the launch picks a variant's products (sy_attn_gpu_prefill_mma_launch) */
    static_assert(sy_attn_prefill_mma_shape<64, false, false, true>::ROWS == sy_attn_prefill_mma_shape<64, false, false>::ROWS,
                  "the 64-key variant has one block shape on either product");
    if (long_rows)
        return sy_attn_prefill_mma_shape<64, false, true>::ROWS;
    if (q_dtype == SY_DTYPE_F32)
        return dmax == 64 ? sy_attn_prefill_mma_shape<64, true, false>::ROWS
                          : sy_attn_prefill_mma_shape<128, true, false>::ROWS;
    return dmax == 64 ? sy_attn_prefill_mma_shape<64, false, false>::ROWS
                      : sy_attn_prefill_mma_shape<128, false, false>::ROWS;
}

/* What a thread copies of every K/V tile: the 16-byte pieces of dims 8 c .. 8 c + 7 of keys
 * key0, key0 + KEY_STEP, .. of the tile. Worked out once: per tile the addresses are then a
 * multiply-add each (recomputed from the strides, they were 9% of the loop's instructions).
 * Whether a copy reads is one 32-bit compare against `lim`, the sequence's keys (0 where the
 * thread's dims lie past the head): with the key compared in 64 bits and the source pointer
 * selected, the copies of a LONG tile took 229 of the 805 instructions of its unmasked path
 * (SASS, sm_90a). H200, in one process: window 128 233 -> 219 us, 8 x 2048 1.28 -> 1.23 ms, the
 * extend chunk 161 -> 154 us; 1 x 8192 (LONG) 2.05-2.17 against 2.16-2.19 ms, inside its spread.
 * An unchecked second form for whole tiles was slower everywhere (its registers spilled). Then the
 * key's row offset in 32 bits (one wide multiply-add into the pointer; 64-bit strides took three
 * multiplies and two adds a copy) and the warpgroup products' descriptors as adds to one per tile
 * (sy_wgmma_desc_advance): the warpgroup kernel's instructions (LONG's, then) 802 M -> 689 M at
 * 1 x 8192 (ncu), H100 in one process 1 x 8192 1533-1590 -> 1448 us, 8 x 2048 988 -> 947-972 us,
 * the extend chunk 121 -> 116 us; 166 -> 162 registers. */
template <class S>
struct sy_attn_prefill_mma_copies {
    static constexpr int PIECES_PER_ROW = S::DIMS / 8, KEY_STEP = SY_ATTN_GPU_THREADS / PIECES_PER_ROW;
    static_assert(KEY_STEP * S::PER_THREAD == S::KT, "a tile's keys in whole steps");
    static_assert(!S::WARPGROUP || KEY_STEP % 8 == 0, "a thread's pieces share one swizzle row phase");
    const unsigned char *k, *v; /* key 0 of the sequence, this thread's dims */
    uint32_t k_row, v_row;      /* bytes from one key to the next (sy_attn_gpu_prefill_mma_takes) */
    int key0, smem;             /* the thread's first key of a tile, and its byte offset in a tile */
    bool dims_ok;               /* the dims are inside the head (else zeros) */

    SY_DEV sy_attn_prefill_mma_copies(const sy_attn_gpu_prefill &p, uint32_t h, int64_t row0)
    {
        const int c = (int)threadIdx.x % PIECES_PER_ROW;
        key0 = (int)threadIdx.x / PIECES_PER_ROW;
        smem = S::kv_offset(key0, c);
        dims_ok = (uint32_t)c * 8u < p.head_dim;
        k_row = (uint32_t)(p.k_s0 * 2), v_row = (uint32_t)(p.v_s0 * 2);
        k = (const unsigned char *)p.k + (row0 * p.k_s0 + (int64_t)h * p.k_s1 + c * 8) * 2;
        v = (const unsigned char *)p.v + (row0 * p.v_s0 + (int64_t)h * p.v_s1 + c * 8) * 2;
    }

    /* The copies of the K and V tile of keys [t0, t0 + KT) into one stage; keys from `lim` on are
     * zeros (a zero V row keeps 0 x garbage out of the output). A tile whose keys all exist (all
     * but a sequence's last) takes one address a tensor and steps from it: 34 instructions a
     * thread for its 8 copies instead of 57 with a bound check and a multiply-add each (sm_90a). */
    SY_DEV void issue(int lim, int t0, unsigned char *k_stage, unsigned char *v_stage) const
    {
        if (t0 + S::KT <= lim) {
            const unsigned char *kp = k + (uint64_t)(uint32_t)(t0 + key0) * k_row;
            const unsigned char *vp = v + (uint64_t)(uint32_t)(t0 + key0) * v_row;
            const uint64_t k_step = (uint64_t)k_row * KEY_STEP, v_step = (uint64_t)v_row * KEY_STEP;
#pragma unroll
            for (int i = 0; i < S::PER_THREAD; i++) {
                const int at = smem + KEY_STEP * i * S::KV_ROW_BYTES;
                sy_cp_async16(k_stage + at, kp, 16);
                sy_cp_async16(v_stage + at, vp, 16);
                kp += k_step, vp += v_step;
            }
            return;
        }
#pragma unroll
        for (int i = 0; i < S::PER_THREAD; i++) {
            const int key = t0 + key0 + KEY_STEP * i, at = smem + KEY_STEP * i * S::KV_ROW_BYTES;
            const bool have = key < lim;
            const uint64_t row = have ? (uint32_t)key : 0u; /* 32 x 32 bits: one wide multiply-add */
            sy_cp_async16(k_stage + at, k + row * k_row, have ? 16 : 0);
            sy_cp_async16(v_stage + at, v + row * v_row, have ? 16 : 0);
        }
    }
};

/* Where a call's K/V tiles come from: contiguous rows (prefill_linear), or the pool's pages
 * (prefill_paged): nhd's, whose tiles are stored as linear rows' ([key][dim], S::kv_offset), or
 * vectorized_5d's, whose tiles keep the pool's order (sy_prefill_k_offset, sy_prefill_v_offset). */
enum { SY_PREFILL_SRC_LINEAR = 0, SY_PREFILL_SRC_PAGED = 1, SY_PREFILL_SRC_PAGED_5D = 2 };

/* Byte offsets of 16-byte pieces in the K and V tiles of source SRC: K's piece `piece` (dims
 * 8 piece ..) of key `key`; V's piece `piece` of row `row` (nhd and linear rows: dims of a key;
 * vectorized_5d: the 8 keys of group `piece` of dim `row`). A vectorized_5d tile keeps the pool's
 * order, piece-major with a piece's rows contiguous (K: KT keys a piece of 8 dims; V: DIMS dims a
 * group of 8 keys), which are K-major core matrices for both products. In the swizzled [key][dim]
 * order every 32-byte sector of that pool (two keys of one piece) was split over two rows of the
 * tile: ncu (H200, the extend chunk) counted twice nhd's L2 sectors and 70% of the shared-memory
 * wavefronts as excess, "Mem Busy" 82%, 265 us against nhd's 111. */
template <class S, int SRC>
SY_DEV constexpr int sy_prefill_k_offset(int key, int piece)
{
    return SRC == SY_PREFILL_SRC_PAGED_5D ? (piece * S::KT + key) * 16 : S::kv_offset(key, piece);
}

template <class S, int SRC>
SY_DEV constexpr int sy_prefill_v_offset(int row, int piece)
{
    return SRC == SY_PREFILL_SRC_PAGED_5D ? (piece * S::DIMS + row) * 16 : S::kv_offset(row, piece);
}

/* The copies of a paged call, with sy_attn_prefill_mma_copies's interface: each tile's keys are
 * found through the sequence's block table, one table read a tile where a tile lies in one page
 * (the page size a multiple of KT), else one a copy. A piece of K (and of nhd's V) is 8 dims of
 * one key, as in linear rows; with V5D (vectorized_5d) a piece of V is 8 keys of one dim, row
 * `dim` of piece `key group` in the tile (sy_prefill_v_offset). Keys outside [kmin, lk) are
 * zeros: kmin is the block's first query's window start, whose page and those after it are live. */
template <class S, bool V5D>
struct sy_attn_prefill_mma_paged_copies {
    static constexpr int PIECES_PER_ROW = S::DIMS / 8, KEY_STEP = SY_ATTN_GPU_THREADS / PIECES_PER_ROW;
    static_assert(KEY_STEP * S::PER_THREAD == S::KT, "a tile's keys in whole steps");
    static_assert(!S::WARPGROUP || KEY_STEP % 8 == 0, "a thread's pieces share one swizzle row phase");
    static constexpr int SRC = V5D ? SY_PREFILL_SRC_PAGED_5D : SY_PREFILL_SRC_PAGED;
    static constexpr int ROW_STEP = KEY_STEP * (V5D ? 16 : S::KV_ROW_BYTES); /* a thread's next row, KEY_STEP on */
    /* V5D's V: a thread's group and its dims dim0 + V_DIM_STEP i, i < V_PER_THREAD */
    static constexpr int V_GROUPS = S::KT / 8, V_DIM_STEP = SY_ATTN_GPU_THREADS / V_GROUPS,
                         V_PER_THREAD = S::DIMS / V_DIM_STEP;
    static_assert(!V5D || (V_DIM_STEP * V_PER_THREAD == S::DIMS && S::KT * S::DIMS * 2 <= S::TILE_BYTES),
                  "a V tile's dims in whole steps, and the pool's order in a tile's bytes");
    const int32_t *table;        /* the sequence's row of block_tables */
    sy_fast_div page;            /* P */
    bool tile_in_page;           /* P is a multiple of KT */
    const unsigned char *k, *v;  /* page 0's key 0 of this thread's piece (V5D's V: its key group and first dim) */
    uint64_t page_bytes;         /* from one page to the next */
    uint32_t k_key, v_key;       /* from one key to the next within a page */
    int key0, smem, kmin, lk;
    int group, dim0, v_smem;         /* V5D's V: the thread's key group (8 keys), first dim, its piece's offset */
    uint32_t head_dim;
    bool dims_ok;

    SY_DEV sy_attn_prefill_mma_paged_copies(const sy_attn_gpu_prefill &p, const sy_attn_gpu_prefill_place &at,
                                            uint32_t h, int first_key)
    {
        /* A warp's copies of one instruction as few whole lines as the layout allows: nhd stores a
         * key's pieces side by side (lanes take a key's pieces, then the next key's), vectorized_5d
         * a piece's keys (K; V: a key group's dims) side by side (lanes take 16 keys of one piece). */
        const int c = V5D ? (int)threadIdx.x / KEY_STEP : (int)threadIdx.x % PIECES_PER_ROW;
        key0 = V5D ? (int)threadIdx.x % KEY_STEP : (int)threadIdx.x / PIECES_PER_ROW;
        smem = sy_prefill_k_offset<S, SRC>(key0, c);
        group = dim0 = v_smem = 0;
        if constexpr (V5D) {
            group = (int)threadIdx.x / V_DIM_STEP;
            dim0 = (int)threadIdx.x % V_DIM_STEP;
            v_smem = sy_prefill_v_offset<S, SRC>(dim0, group);
        }
        head_dim = p.head_dim;
        dims_ok = (uint32_t)c * 8u < p.head_dim;
        kmin = first_key;
        lk = (int)at.lk;
        table = p.block_tables + (int64_t)at.seq * p.bt_s0;
        page = p.page_div;
        const uint64_t P = p.dims.page_size, H = p.dims.kv_heads, D = p.dims.head_dim;
        tile_in_page = P % S::KT == 0;
        page_bytes = P * H * D * 2;
        if constexpr (V5D) {
            /* K (pages, H, D/8, P, 8): a key's 8 dims of piece c are 16 bytes, keys 16 bytes apart */
            k = (const unsigned char *)p.k + (h * D * P + (uint64_t)c * P * 8) * 2;
            k_key = 16;
            /* V (pages, H, P/8, D, 8): 8 keys of dim d are 16 bytes, key groups D x 16 bytes apart */
            v = (const unsigned char *)p.v + (h * D * P + (uint64_t)dim0 * 8) * 2;
            v_key = (uint32_t)(D * 2);
        } else {
            k = (const unsigned char *)p.k + (h * D + (uint64_t)c * 8) * 2;
            v = (const unsigned char *)p.v + (h * D + (uint64_t)c * 8) * 2;
            k_key = v_key = (uint32_t)(H * D * 2);
        }
    }

    /* Key `key`'s page in the pool (its block-table entry) and its offset in that page. */
    SY_DEV void page_of(int key, uint32_t *pool_page, uint32_t *offset) const
    {
        const uint32_t blk = sy_fast_div_quot(page, (uint32_t)key);
        *pool_page = (uint32_t)table[blk];
        *offset = (uint32_t)key - blk * page.divisor;
    }

    /* The pool slot of key t0 (page number x P + offset), for a tile that lies in one page. */
    SY_DEV int64_t tile_slot(int t0) const
    {
        uint32_t pool_page, offset;
        page_of(t0, &pool_page, &offset);
        return (int64_t)pool_page * page.divisor + offset;
    }

    /* Whether every key of tile t0 is live and the tile lies in one page. */
    SY_DEV bool whole(int t0) const
    {
        return tile_in_page && t0 >= kmin && t0 + S::KT <= lk;
    }

    /* Key `key`'s bytes in tensor `base` (key_bytes apart within a page). */
    SY_DEV const unsigned char *at_key(const unsigned char *base, uint32_t key_bytes, int key) const
    {
        uint32_t pool_page, offset;
        page_of(key, &pool_page, &offset);
        return base + (uint64_t)pool_page * page_bytes + (uint64_t)offset * key_bytes;
    }

    /* K's rows (and nhd's V) of a tile that lies in one page, from the thread's first key's kp and
     * vp on. CHECKED: keys outside [kmin, lim) are zeros; a tile whose keys are all live (every
     * tile of a call but the first and the last of a row range) takes the copies without a key
     * compare and pointer select each (ncu of the extend chunk on an H100: the tile's copies were
     * about a third of the paged kernel's instructions, 108 a warp a tile). */
    template <bool CHECKED>
    SY_DEV void copy_page_rows(int lim, int t0, const unsigned char *kp, const unsigned char *vp, unsigned char *k_stage,
                               unsigned char *v_stage) const
    {
#pragma unroll
        for (int i = 0; i < S::PER_THREAD; i++) {
            const int key = t0 + key0 + KEY_STEP * i, at = smem + ROW_STEP * i;
            const bool have = !CHECKED || (key >= kmin && key < lim);
            sy_cp_async16(k_stage + at, have ? kp : k, have ? 16 : 0);
            if constexpr (!V5D)
                sy_cp_async16(v_stage + at, have ? vp : v, have ? 16 : 0);
            kp += (uint64_t)k_key * KEY_STEP;
            if constexpr (!V5D)
                vp += (uint64_t)v_key * KEY_STEP;
        }
    }

    /* K's tile (and nhd's V) of keys [t0, t0 + KT) into one stage; keys from `lim` on are zeros. */
    SY_DEV void issue(int lim, int t0, unsigned char *k_stage, unsigned char *v_stage) const
    {
        constexpr bool V_ROWS = !V5D;
        /* the tile's page, read once for both tensors where the tile lies in one page */
        uint32_t tile_page = 0, tile_off = 0;
        if (tile_in_page)
            page_of(t0, &tile_page, &tile_off);
        if (tile_in_page) {
            const unsigned char *kp = k + tile_page * page_bytes + (uint64_t)(tile_off + key0) * k_key;
            const unsigned char *vp = v + tile_page * page_bytes + (uint64_t)(tile_off + key0) * v_key;
            if (t0 >= kmin && t0 + S::KT <= lim)
                copy_page_rows<false>(lim, t0, kp, vp, k_stage, v_stage);
            else
                copy_page_rows<true>(lim, t0, kp, vp, k_stage, v_stage);
        } else {
#pragma unroll
            for (int i = 0; i < S::PER_THREAD; i++) {
                const int key = t0 + key0 + KEY_STEP * i, at = smem + ROW_STEP * i;
                const bool have = key >= kmin && key < lim;
                sy_cp_async16(k_stage + at, have ? at_key(k, k_key, key) : k, have ? 16 : 0);
                if constexpr (V_ROWS)
                    sy_cp_async16(v_stage + at, have ? at_key(v, v_key, key) : v, have ? 16 : 0);
            }
        }
        if constexpr (V5D) {
            /* V's rows are dims dim0 + V_DIM_STEP i, its pieces the 8 keys of this thread's group;
             * the group shares a page (8 divides P); keys past lk are zeros (cp.async's tail) */
            const int key = t0 + 8 * group;
            const bool live = key + 8 > kmin && key < lk;
            const unsigned char *vp = !live ? v
                                      : tile_in_page ? v + tile_page * page_bytes + (uint64_t)(tile_off + 8 * group) * v_key
                                                     : at_key(v, v_key, key);
            if (key + 8 <= lk) { /* whole groups: a copy or none (a predicate, no byte count) */
#pragma unroll
                for (int i = 0; i < V_PER_THREAD; i++) {
                    const bool have = live && (uint32_t)(dim0 + V_DIM_STEP * i) < head_dim;
                    sy_cp_async16(v_stage + v_smem + V_DIM_STEP * 16 * i, vp + V_DIM_STEP * 16 * i, have ? 16 : 0);
                }
            } else {
                const int bytes = live ? 2 * (lk - key) : 0;
#pragma unroll
                for (int i = 0; i < V_PER_THREAD; i++) {
                    const bool dim_ok = (uint32_t)(dim0 + V_DIM_STEP * i) < head_dim;
                    sy_cp_async16(v_stage + v_smem + V_DIM_STEP * 16 * i, vp + V_DIM_STEP * 16 * i, dim_ok ? bytes : 0);
                }
            }
        }
    }
};

/* P's A fragment of key k-step kk from the probabilities in S's accumulators (an m16n8 pair is an
 * m16k16 A fragment): n-tiles 2 kk (registers 0, 1) and 2 kk + 1 (2, 3), rounded to bf16. */
template <int NT>
SY_DEV void sy_attn_mma_pack_p(const float (&s)[NT][4], int kk, uint32_t (&pa)[4])
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float *e = s[2 * kk + j / 2] + 2 * (j % 2);
        pa[j] = sy_mma_pack_bf16x2(e[0], e[1]);
    }
}

SY_DEV float sy_attn_mma_exp2(float x)
{
#if defined(SY_EMU_TENSOR_CORES)
    return exp2f(x);
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
#endif
}

/* The TMA maps of a call's K and V ([rows][KV heads][head dim]: linear rows, or an nhd pool's
 * slots; boxes of one head's dims for a tile's keys), a kernel parameter: the copies read a map
 * where the parameters live. */
struct sy_attn_prefill_tma_maps {
    sy_tma_map k, v;
};

/* The kernels whose whole tiles may come by TMA: the warpgroup products, over any source. */
template <class S, int SRC>
constexpr bool sy_attn_prefill_tma_source = S::WARPGROUP && SY_TMA_BUILT;

template <int DMAX, bool QPLANES, bool LONG, bool ASYNC, int SRC>
static __global__ __launch_bounds__(SY_ATTN_GPU_THREADS, (sy_attn_prefill_mma_shape<DMAX, QPLANES, LONG, ASYNC>::MIN_BLOCKS)) void
sy_attn_gpu_prefill_mma_kernel(const sy_attn_gpu_prefill p, const SY_GRID_CONSTANT sy_attn_prefill_tma_maps tma)
{
    constexpr bool V5D = SRC == SY_PREFILL_SRC_PAGED_5D;
    using S = sy_attn_prefill_mma_shape<DMAX, QPLANES, LONG, ASYNC>;
    SY_GPU_DYNAMIC_SHARED_ALIGNED(unsigned char, sy_prefill_mma_smem, 16);
    constexpr float LOG2E = 1.4426950408889634f, LN2 = 0.6931471805599453f;

    sy_attn_gpu_prefill_place at;
    if (!sy_attn_gpu_prefill_find(p, &at))
        return;
    const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, c = lane % 4;
    const uint32_t h = at.h, g0 = at.g0, D = p.head_dim;
    const int64_t q_row0 = at.q_row0, k_row0 = at.k_row0, lk = at.lk;

    /* This lane's rows warp * 16 MT + 16 mt + g + 8 hf: their keys [lo, hi) (empty when the row is
     * padding), and the block's union [span_lo, span_hi) and intersection [full_lo, full_hi). */
    int lo[S::MT][2], hi[S::MT][2];
#pragma unroll
    for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            uint32_t qi, gi;
            int64_t row_lo = 0, row_hi = 0;
            if (sy_attn_gpu_prefill_row(p, at, (uint32_t)(warp * 16 * S::MT + mt * 16 + g + 8 * hf), &qi, &gi))
                sy_attn_gpu_prefill_keys(p, at, (int64_t)at.i0 + qi, &row_lo, &row_hi);
            lo[mt][hf] = (int)row_lo, hi[mt][hf] = (int)row_hi;
        }
    int64_t span_lo, span_hi, inner_lo, inner_hi;
    sy_attn_gpu_prefill_span(p, at, &span_lo, &span_hi, &inner_lo, &inner_hi);
    const int last = (int)span_hi, first = span_lo < span_hi ? (int)span_lo / S::KT * S::KT : last;
    const int full_lo = (int)inner_lo, full_hi = (int)inner_hi;

    /* l: the rows' sums of P. The warpgroup kernel takes them as products of P and a matrix of
     * ones beside O's (an n-tile of 8 equal columns, C fragments as O's: registers 0, 1 row g, 2, 3
     * row g + 8). The mma.sync kernels add a lane's probabilities into register 2 hf and sum the
     * quad at the end: the 4 more registers of the products' fragment made ptxas spill into the
     * key-tile loop of the 64-key mma.sync kernel (3 loads a tile), under the bound of 4 blocks an
     * SM. */
    float o[S::MT][S::DT][4], m[S::MT][2], l[S::MT][4];
    sy_mma_zero(o);
#pragma unroll
    for (int mt = 0; mt < S::MT; mt++) {
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
            m[mt][hf] = -INFINITY;
#pragma unroll
        for (int j = 0; j < 4; j++)
            l[mt][j] = 0.0f;
    }
    /* tiles 0 .. STAGES - 2 into their stages, one commit group each (empty past the range), so
     * that tile i is always group i */
    unsigned char *ring = sy_prefill_mma_smem;
    if constexpr (S::ALIGN_SLACK > 0)
        ring += (0u - (uint32_t)__cvta_generic_to_shared(ring)) % (uint32_t)S::ALIGN_SLACK;
    const auto copies = [&] {
        if constexpr (SRC == SY_PREFILL_SRC_LINEAR)
            return sy_attn_prefill_mma_copies<S>(p, h, k_row0);
        else
            return sy_attn_prefill_mma_paged_copies<S, V5D>(p, at, h, (int)span_lo);
    }();
    const int copy_lim = copies.dims_ok ? (int)lk : 0; /* keys of the sequence this thread copies */
    /* A tile whose keys all exist comes by TMA where the call allows it (head dim 64 on the
     * warpgroup products: linear rows, an nhd pool of whole-tile pages, a vectorized_5d pool of
     * 64-key pages; p.tma_tiles): one thread issues both tensors' copies into the stage (a page's:
     * after reading the block table) and every thread waits on the stage's barrier, so the other
     * threads spend nothing on the copies.
     * A sequence's last tile, whose keys past the sequence are zeros (and a window's first, whose
     * keys before the window's page are), takes the copies. H100, against every thread's cp.async
     * copies (alternating rounds, medians): 1 x 8192 1298 against 1338 us, 8 x 2048 783 against
     * 810 us, the extend chunk 99 against 105 us, its nhd paged call 103 against 109 us, its
     * vectorized_5d paged call 105 against 110 us (bulk copies against cp.async), window 128
     * unchanged. The same kernel without any copies of whole tiles took 15-20% less: what is left
     * is the tiles' traffic from L2 (every 64-row block reads its own) and the barrier a tile. The
     * lambdas name `copies` only where TMA is compiled: a capture that a kernel without TMA did
     * not use (vectorized_5d's, then) moved its code about and cost it 4.7%. */
    constexpr bool TMA = sy_attn_prefill_tma_source<S, SRC>;
    const bool tma_on = TMA && p.tma_tiles;
    uint64_t *const bars = (uint64_t *)(ring + S::BARS_OFFSET);
    const auto by_tma = [&](int t0) {
        if constexpr (!TMA)
            return false;
        else if constexpr (SRC == SY_PREFILL_SRC_LINEAR)
            return tma_on && t0 + S::KT <= (int)lk;
        else
            return tma_on && copies.whole(t0);
    };
    const auto fill = [&](int t0, int stage) {
        unsigned char *const k_stage = ring + stage * S::STAGE_BYTES, *const v_stage = k_stage + S::TILE_BYTES;
        if constexpr (TMA) {
            if (by_tma(t0)) {
                if (tid == 0) {
                    sy_mbarrier_expect_bytes(bars + stage, 2 * S::TILE_BYTES);
                    if constexpr (V5D) {
                        /* a page of KT keys: head h's K and V blocks are the tiles, byte for byte */
                        static_assert(S::TILE_BYTES == S::KT * S::DIMS * 2, "unpadded tiles of a page's order");
                        const uint64_t from = (uint64_t)copies.tile_slot(t0) / S::KT * copies.page_bytes +
                                              (uint64_t)h * S::TILE_BYTES;
                        sy_bulk_load(k_stage, (const unsigned char *)p.k + from, S::TILE_BYTES, bars + stage);
                        sy_bulk_load(v_stage, (const unsigned char *)p.v + from, S::TILE_BYTES, bars + stage);
                    } else {
                        int64_t row;
                        if constexpr (SRC == SY_PREFILL_SRC_LINEAR)
                            row = k_row0 + t0;
                        else
                            row = copies.tile_slot(t0);
                        sy_tma_load_box(k_stage, &tma.k, (int32_t)h, (int32_t)row, bars + stage);
                        sy_tma_load_box(v_stage, &tma.v, (int32_t)h, (int32_t)row, bars + stage);
                    }
                }
                return;
            }
        }
        copies.issue(copy_lim, t0, k_stage, v_stage);
    };
    if (tma_on && tid == 0)
        for (int i = 0; i < S::STAGES; i++)
            sy_mbarrier_init(bars + i);
    constexpr int IO = QPLANES ? SY_DTYPE_F32 : SY_DTYPE_BF16;
    unsigned char *const q_tile = ring + (S::WARPGROUP ? S::STAGES : S::STAGES - 1) * S::STAGE_BYTES;
    /* The warpgroup products read q's tile from shared memory at every key tile, after the loop's
     * first wait and barrier: a bf16 q of whole heads with a positive scale is copied there as it
     * is, in tile 0's commit group (zeros for rows outside the call), instead of passing through
     * registers and a barrier of its own (below). Without key tiles nothing waits for copies, so
     * none is issued. */
    const bool q_copied = S::WARPGROUP && p.q_vec && D == DMAX && p.c.score_scale >= 0.0f && first < last;
    if (q_copied) {
#pragma unroll
        for (int i = 0; i < S::Q_PER_THREAD; i++) {
            const int id = tid + SY_ATTN_GPU_THREADS * i, row = id / (DMAX / 8), piece = id % (DMAX / 8);
            uint32_t qi, gi;
            const bool row_ok = sy_attn_gpu_prefill_row(p, at, (uint32_t)row, &qi, &gi);
            const int64_t from =
                (q_row0 + at.i0 + qi) * p.c.q_s0 + (int64_t)(h * p.group + g0 + gi) * p.c.q_s1 + 8 * piece;
            sy_cp_async16(q_tile + row * S::Q_ROW_BYTES + piece * 16, (const uint16_t *)p.c.q + (row_ok ? from : 0),
                          row_ok ? 16 : 0);
        }
    }
#pragma unroll
    for (int i = 0; i < S::STAGES - 1; i++) {
        if (first + i * S::KT < last)
            fill(first + i * S::KT, i);
        sy_cp_async_commit();
    }

    /* q's A fragments, read while the first tiles are in flight. q goes through the ring's last
     * stage (free until the loop's first refill; the warpgroup products keep it past the ring, to
     * be read every tile, where it was copied above when it could be): 16-byte loads of 8 dims a piece, stored as bf16 tiles
     * (hi and lo parts of an f32 q), from which ldmatrix gives each warp its fragments. (Loaded
     * straight into fragments, each lane read 4 scattered bytes at a time and the warps waited on
     * those loads one after another.) A negative softmax scale is moved into q's sign (exact), so
     * that the scores' scale is positive and the softmax can take the max of the raw products. */
    if (!q_copied) {
        const uint32_t q_sign = p.c.score_scale < 0.0f ? 0x80008000u : 0u;
        /* a thread's pieces in groups whose loads are all in flight at once (f32 pieces in groups
         * of 4, so that a group's 32 values leave room for the rest) */
        constexpr int GROUP = QPLANES && S::Q_PER_THREAD > 4 ? 4 : S::Q_PER_THREAD;
#pragma unroll
        for (int group0 = 0; group0 < S::Q_PER_THREAD; group0 += GROUP) {
            float x[GROUP][8];
            int row[GROUP], piece[GROUP];
#pragma unroll
            for (int i = 0; i < GROUP; i++) {
                const int id = tid + SY_ATTN_GPU_THREADS * (group0 + i);
                row[i] = id / (DMAX / 8), piece[i] = id % (DMAX / 8);
                uint32_t qi, gi;
                const uint32_t d = (uint32_t)piece[i] * 8u;
                const bool row_ok = sy_attn_gpu_prefill_row(p, at, (uint32_t)row[i], &qi, &gi);
                const int64_t from = (q_row0 + at.i0 + qi) * p.c.q_s0 + (int64_t)(h * p.group + g0 + gi) * p.c.q_s1 + d;
                sy_gpu_load_act_run_as<8, IO>(p.c.q, from, row_ok && d < D ? (int)min(8u, D - d) : 0, p.q_vec, x[i]);
            }
#pragma unroll
            for (int i = 0; i < GROUP; i++) {
                uint32_t hi[4], lo[4];
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    if constexpr (QPLANES)
                        sy_mma_split_bf16(x[i][2 * e], x[i][2 * e + 1], &hi[e], &lo[e]);
                    else
                        hi[e] = sy_mma_pack_bf16x2(x[i][2 * e], x[i][2 * e + 1]); /* exact: x holds bf16 values */
                    hi[e] ^= q_sign, lo[e] ^= q_sign;
                }
                unsigned char *const dst = q_tile + row[i] * S::Q_ROW_BYTES + piece[i] * 16;
                sy_st_raw<16>(dst, make_uint4(hi[0], hi[1], hi[2], hi[3]));
                if constexpr (QPLANES)
                    sy_st_raw<16>(dst + S::Q_PLANE_BYTES, make_uint4(lo[0], lo[1], lo[2], lo[3]));
            }
        }
    }
    if constexpr (!S::WARPGROUP)
        __syncthreads(); /* q's tiles are complete (the warpgroup products' first read is in the loop) */
    /* ldmatrix row addresses of this lane: matrix lane / 8, row lane % 8 */
    const int mi = lane / 8, mr = lane % 8;
    /* register j of (mt, ks): rows 16 mt + g + 8 (j % 2) of the warp's, dims 16 ks + 2c + 8 (j / 2) */
    uint32_t q_hi[S::MT][S::KS][4], q_lo[QPLANES ? S::MT : 1][QPLANES ? S::KS : 1][4];
    /* the warpgroup products' q: this lane's ldmatrix row of the kept tile */
    const unsigned char *const q_kept =
        ring + S::STAGES * S::STAGE_BYTES + (warp * 16 + 8 * (mi % 2) + mr) * S::Q_ROW_BYTES;
#pragma unroll
    for (int mt = 0; mt < (S::WARPGROUP ? 0 : S::MT); mt++)
#pragma unroll
        for (int ks = 0; ks < S::KS; ks++) {
            const int row = warp * 16 * S::MT + 16 * mt + 8 * (mi % 2) + mr;
            const unsigned char *at =
                ring + (S::STAGES - 1) * S::STAGE_BYTES + row * S::Q_ROW_BYTES + (16 * ks + 8 * (mi / 2)) * 2;
            sy_ldmatrix_x4<false>(q_hi[mt][ks], at);
            if constexpr (QPLANES)
                sy_ldmatrix_x4<false>(q_lo[mt][ks], at + S::Q_PLANE_BYTES);
        }
    /* A zero scale becomes the least normal float: every product times it is 0 or below 2^-90 (for
     * products under 2^36), whose ex2 is exactly 1, as at zero, while a masked -inf stays -inf and
     * its probability 0 (at zero, 0 x -inf would be NaN), so no element needs a check. A NaN scale
     * stays NaN. */
    float score_scale = fabsf(p.c.score_scale) * LOG2E;
    if (score_scale == 0.0f)
        score_scale = FLT_MIN;
    /* the warpgroup products' ones (every layout of a matrix of ones is one), published with the
     * loop's first fence and barrier; descriptors of the ring's start, which the tiles' and the
     * ones' are steps from: swizzled (the ones, and tiles but V5D's), and V5D's tiles in the pool's
     * order, K-major core matrices of 8 rows, the next piece one piece's rows on */
    uint64_t ring_desc = 0, tile_ring_desc = 0;
    if constexpr (S::WARPGROUP) {
        static_assert(S::ONES_BYTES == 8 * SY_ATTN_GPU_THREADS, "8 bytes of ones a thread");
        constexpr uint32_t BF16_ONES = 0x3F803F80u; /* a pair of bf16 1.0 */
        ((uint2 *)(ring + S::ONES_OFFSET))[tid] = make_uint2(BF16_ONES, BF16_ONES);
        ring_desc = sy_wgmma_desc_sw128(ring);
        static_assert(!V5D || S::KT == S::DIMS, "one descriptor form for K's and V's tiles in the pool's order");
        const uint32_t next_piece = sy_prefill_k_offset<S, SRC>(0, 1), next_8_rows = sy_prefill_k_offset<S, SRC>(8, 0);
        tile_ring_desc = V5D ? sy_wgmma_desc_kmajor(ring, next_piece, next_8_rows) : ring_desc;
    }
    /* bytes from one k-step of 16 (dims of K, keys of V) to the next in a tile read as K-major B */
    const uint32_t k_major_step = (uint32_t)(sy_prefill_k_offset<S, SRC>(0, 2) - sy_prefill_k_offset<S, SRC>(0, 0));
    /* One barrier a tile: it says that tile t0 has landed for every thread and that every warp is
     * done with the tile before it, whose stage (or, the first time, q's) is then refilled. */
    uint32_t tma_parity = 0; /* bit s: the parity of stage s's next barrier phase */
    for (int t0 = first, st = 0; t0 < last; t0 += S::KT, st = st + 1 == S::STAGES ? 0 : st + 1) {
        sy_cp_async_wait<S::STAGES - 2>(); /* this thread's copies of tile t0 have landed */
        if constexpr (S::WARPGROUP)
            sy_fence_proxy_async(); /* ... for the warpgroup products too */
        __syncthreads();
        const int refill = st == 0 ? S::STAGES - 1 : st - 1, ahead = t0 + (S::STAGES - 1) * S::KT;
        if (ahead < last)
            fill(ahead, refill);
        sy_cp_async_commit();
        if (by_tma(t0)) {
            sy_mbarrier_wait(bars + st, tma_parity >> st & 1u);
            tma_parity ^= 1u << st;
        }
        const unsigned char *k_tile = ring + st * S::STAGE_BYTES, *v_tile = k_tile + S::TILE_BYTES;

        float s[S::MT][S::NT][4], alpha[S::MT][2];
        bool moved = false; /* a row of this thread's found a new max in this tile */

        /* The online softmax in log2 units over n-tiles [N0, N0 + NC) of S: the max over the raw
         * products (the scale is positive), each probability one FMA and one ex2, masked only where
         * those keys cross a row's range; alpha gets the factor O's rows (and their sums) are to be
         * rescaled by. The max runs as two chains (j = 0, 1), halving its dependent latency.
         * Instantiated twice, for keys that cross a row's range and for keys inside every row's:
         * the second has no branch, so the compiler interleaves the two half-rows' chains (with a
         * run-time `masked`, each half-row was its own basic block). A warp none of whose rows
         * found a new max in the tile skips O's rescale (by 1, exactly: the results do not change),
         * a multiply an accumulator a tile (the warpgroup kernel's unmasked tile is 242
         * instructions a warp when it skips, 278 when not, in its sm_90a SASS); in long rows most
         * tiles find none. (FlashAttention-4 goes further and keeps a row's max until a tile's
         * passes it by more than log2(256), which skips nearly every rescale; at that threshold the
         * emulated lq1024 check's distance to the cpu plugin went from 1.9e-4 to 4.9e-4, because a
         * tile's largest probability is no longer exactly 1 before its bf16 rounding; not done.)
         * H200, in one process: 1 x 8192
         * 2.14-2.16 -> 2.08-2.10 ms, 8 x 2048 1.24-1.26 -> 1.15-1.18 ms, window 128 215-219 ->
         * 208-209 / 417-420 -> 402-413 us, the extend chunk 152 -> 147-149 us. Issuing the refill's
         * copies after QK's products instead of before was mixed (8 x 2048 and the extend chunk 2-3%
         * faster, 1 x 8192 2% slower, inside its spread) and is not done. */
        const auto softmax_as = [&](auto masked_tag, auto first_tag, auto count_tag) {
            constexpr bool masked = decltype(masked_tag)::value;
            constexpr int N0 = decltype(first_tag)::value, NC = decltype(count_tag)::value;
#pragma unroll
            for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
                    for (int nt = N0; nt < N0 + NC; nt++)
#pragma unroll
                        for (int j = 0; j < 2; j++) {
                            const int key = t0 + 8 * nt + 2 * c + j;
                            if (masked && (key < lo[mt][hf] || key >= hi[mt][hf]))
                                s[mt][nt][2 * hf + j] = -INFINITY;
                            mx[j] = fmaxf(mx[j], s[mt][nt][2 * hf + j]);
                        }
                    float tile_max = fmaxf(mx[0], mx[1]);
                    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xFFFFFFFFu, tile_max, 1));
                    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xFFFFFFFFu, tile_max, 2));
                    const float candidate = tile_max * score_scale;
                    const bool move = candidate > m[mt][hf];
                    alpha[mt][hf] = move ? sy_attn_mma_exp2(m[mt][hf] - candidate) : 1.0f;
                    moved |= move;
                    if (move)
                        m[mt][hf] = candidate;
                    const float base = m[mt][hf] == -INFINITY ? 0.0f : m[mt][hf];
                    float sum[2] = {0.0f, 0.0f};
#pragma unroll
                    for (int nt = N0; nt < N0 + NC; nt++)
#pragma unroll
                        for (int j = 0; j < 2; j++) {
                            const float x = s[mt][nt][2 * hf + j];
                            const float e = sy_attn_mma_exp2(fmaf(x, score_scale, -base));
                            s[mt][nt][2 * hf + j] = e;
                            sum[j] += e;
                        }
                    if constexpr (!S::WARPGROUP)
                        l[mt][2 * hf] = l[mt][2 * hf] * alpha[mt][hf] + (sum[0] + sum[1]);
                }
        };
        const auto softmax = [&](auto first_tag, auto count_tag) {
            const int k0 = t0 + 8 * decltype(first_tag)::value, k1 = k0 + 8 * decltype(count_tag)::value;
            if (k0 < full_lo || k1 > full_hi)
                softmax_as(std::true_type{}, first_tag, count_tag);
            else
                softmax_as(std::false_type{}, first_tag, count_tag);
        };
        const auto rescale_o = [&] {
#pragma unroll
            for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
#pragma unroll
                    for (int dt = 0; dt < S::DT; dt++)
                        o[mt][dt][j] *= alpha[mt][j / 2];
                    if constexpr (S::WARPGROUP)
                        l[mt][j] *= alpha[mt][j / 2];
                }
        };

        if constexpr (S::WARPGROUP) {
            static_assert(!QPLANES && S::MT == 1 && S::KT == 64 && S::NT == 8, "one m64n64 S tile, bf16 q");
            /* q's A fragments, read again for this tile: held in registers for the call (as mma.sync
             * holds them), they shared registers with P's fragments (sy_attn_gpu_prefill_mma_launch). */
            uint32_t qa[S::KS][4], pa[4][4]; /* pa: P's A fragments of the tile's 4 key k-steps */
#pragma unroll
            for (int ks = 0; ks < S::KS; ks++)
                sy_ldmatrix_x4<false>(qa[ks], q_kept + (16 * ks + 8 * (mi / 2)) * 2);
            sy_wgmma_hold(qa);
            /* Every hold before a fence pins the instructions that last touched those registers
             * before it: the compiler moves register arithmetic across asm statements freely (it
             * had placed O's rescale after the fence, where the PTX ISA does not let accumulators
             * be written), and the fence only orders what comes before it. A hold after a wait
             * keeps the registers the products read (q, P) from being reused before it. */
            const uint64_t k_desc = sy_wgmma_desc_advance(tile_ring_desc, st * S::STAGE_BYTES);
            const uint64_t v_desc = sy_wgmma_desc_advance(k_desc, S::TILE_BYTES);
            const uint64_t ones_desc = sy_wgmma_desc_advance(ring_desc, S::ONES_OFFSET);
            sy_wgmma_hold(s[0]);
            sy_wgmma_fence();
            sy_wgmma_m64k16<64, 0, false>(s[0], qa[0], k_desc);
#pragma unroll
            for (int ks = 1; ks < S::KS; ks++)
                sy_wgmma_m64k16<64, 0, true>(s[0], qa[ks], sy_wgmma_desc_advance(k_desc, k_major_step * ks));
            sy_wgmma_commit();
            sy_wgmma_wait<0>();
            sy_wgmma_hold(s[0]);
            sy_wgmma_hold(qa);
            softmax(std::integral_constant<int, 0>{}, std::integral_constant<int, S::NT>{});
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                sy_attn_mma_pack_p(s[0], kk, pa[kk]);
            if (__any_sync(0xFFFFFFFFu, moved))
                rescale_o();
            sy_wgmma_hold(o[0]);
            sy_wgmma_hold(l);
            sy_wgmma_hold(pa);
            sy_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                /* V's tile as the N-major B ([key][dim]), or (V5D) as the K-major B K's is */
                if constexpr (V5D)
                    sy_wgmma_m64k16<64, 0, true>(o[0], pa[kk], sy_wgmma_desc_advance(v_desc, k_major_step * kk));
                else
                    sy_wgmma_m64k16<64, 1, true>(o[0], pa[kk], sy_wgmma_desc_advance(v_desc, 16 * kk * S::KV_ROW_BYTES));
                sy_wgmma_m64k16<8, 0, true>(l, pa[kk], ones_desc);
            }
            sy_wgmma_commit();
            /* waited for before the next tile: its refill overwrites this V, and its softmax rescales O */
            sy_wgmma_wait<0>();
            sy_wgmma_hold(o[0]);
            sy_wgmma_hold(l);
            sy_wgmma_hold(pa);
        } else {
            sy_mma_zero(s);
            /* k-steps outermost, so that the 16 products between two of one accumulator's hide the
             * tensor core's latency (n-tiles outermost chained each accumulator's products back to
             * back, and warps stalled on them). */
#pragma unroll
            for (int ks = 0; ks < S::KS; ks++)
#pragma unroll
                for (int np = 0; np < S::NT / 2; np++) {
                    /* matrices: keys 16 np + 8 (mi / 2) .., dims 16 ks + 8 (mi % 2): B of n-tiles 2 np
                     * (registers 0, 1) and 2 np + 1 (2, 3) */
                    const int key = 16 * np + 8 * (mi / 2) + mr;
                    uint32_t kb[4];
                    sy_ldmatrix_x4<false>(kb, k_tile + sy_prefill_k_offset<S, SRC>(key, 2 * ks + mi % 2));
#pragma unroll
                    for (int mt = 0; mt < S::MT; mt++) {
                        sy_mma_bf16(s[mt][2 * np], q_hi[mt][ks], kb[0], kb[1]);
                        sy_mma_bf16(s[mt][2 * np + 1], q_hi[mt][ks], kb[2], kb[3]);
                        if constexpr (QPLANES) {
                            sy_mma_bf16(s[mt][2 * np], q_lo[mt][ks], kb[0], kb[1]);
                            sy_mma_bf16(s[mt][2 * np + 1], q_lo[mt][ks], kb[2], kb[3]);
                        }
                    }
                }
            softmax(std::integral_constant<int, 0>{}, std::integral_constant<int, S::NT>{});
            if (__any_sync(0xFFFFFFFFu, moved))
                rescale_o();
#pragma unroll
            for (int kk = 0; kk < S::KT / 16; kk++) {
                uint32_t pa[S::MT][4];
#pragma unroll
                for (int mt = 0; mt < S::MT; mt++)
                    sy_attn_mma_pack_p(s[mt], kk, pa[mt]);
#pragma unroll
                for (int dp = 0; dp < S::DT / 2; dp++) {
                    /* matrices: keys 16 kk + 8 (mi % 2) .., dims 16 dp + 8 (mi / 2): B of n-tiles 2 dp and 2 dp + 1 */
                    uint32_t vb[4];
                    if constexpr (V5D) /* rows dims, pieces keys: matrices dims 16 dp + 8 (mi / 2) .., keys 16 kk + 8 (mi % 2), as K's */
                        sy_ldmatrix_x4<false>(vb, v_tile + sy_prefill_v_offset<S, SRC>(16 * dp + 8 * (mi / 2) + mr, 2 * kk + mi % 2));
                    else
                        sy_ldmatrix_x4<true>(vb, v_tile + (16 * kk + 8 * (mi % 2) + mr) * S::KV_ROW_BYTES + (16 * dp + 8 * (mi / 2)) * 2);
#pragma unroll
                    for (int mt = 0; mt < S::MT; mt++) {
                        sy_mma_bf16(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
                        sy_mma_bf16(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
                    }
                }
            }
        }
    }

#pragma unroll
    for (int mt = 0; mt < S::MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float sum = l[mt][2 * hf];
            if constexpr (!S::WARPGROUP) {
                sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
                sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
            }
            uint32_t qi, gi;
            if (!sy_attn_gpu_prefill_row(p, at, (uint32_t)(warp * 16 * S::MT + mt * 16 + g + 8 * hf), &qi, &gi))
                continue;
            const int64_t query = (int64_t)at.i0 + qi;
            const uint32_t head = h * p.group + g0 + gi;
            const float *sink = p.c.sinks ? &p.c.sinks[(int64_t)head * p.c.sinks_s0] : NULL;
            /* m back in natural-log units; the row's normalization worked out once (per element, the
             * compiler re-read the sink and redid the exponentials and the division after every
             * store, which may alias it: 85 instructions an output element) */
            const float f = sy_attn_gpu_norm_factor(sy_attn_gpu_norm_of(m[mt][hf] * LN2, sum, sink)) * p.c.out_scale;
            const int64_t out_row = (q_row0 + query) * p.c.out_s0 + (int64_t)head * p.c.out_s1;
            /* bf16 pairs of a whole head: one conversion and one store a pair. (Through the general
             * store, which rounds by hand and checks each pair's room, the warpgroup kernel's finish
             * was 727 instructions a warp in its sm_90a SASS; 334 this way, most of them the
             * normalization.) The conversion rounds to nearest even as sy_f32_to_bf16 does, and a
             * NaN stays a NaN (its payload not kept). */
            if (!QPLANES && p.out_pairs && D == DMAX) {
                uint32_t *const out = (uint32_t *)((uint16_t *)p.c.out + out_row) + c;
#pragma unroll
                for (int dt = 0; dt < S::DT; dt++)
                    out[4 * dt] = sy_mma_pack_bf16x2(o[mt][dt][2 * hf] * f, o[mt][dt][2 * hf + 1] * f);
                continue;
            }
#pragma unroll
            for (int dt = 0; dt < S::DT; dt++) {
                const uint32_t d = (uint32_t)(8 * dt + 2 * c);
                const float x[2] = {o[mt][dt][2 * hf] * f, o[mt][dt][2 * hf + 1] * f};
                if (d < D)
                    sy_gpu_store_act_run_as<2, IO>(p.c.out, out_row + d, (int)min(2u, D - d), p.out_pairs, x);
            }
        }
}

/* Whether the tensor-core kernel takes a call: bf16 K/V with 16-byte aligned rows, each row under
 * 4 GiB from the next (its copies step from key to key in 32 bits). */
static inline bool sy_attn_gpu_prefill_mma_takes(const sy_attn_gpu_prefill &p, int32_t kv_dtype)
{
    if (p.block_tables) /* pages: 16-byte aligned pieces */
        return kv_dtype == SY_DTYPE_BF16 && p.k_aligned && p.v_aligned;
    const int64_t row_limit = (int64_t)(UINT32_MAX / 2);
    return kv_dtype == SY_DTYPE_BF16 && p.k_aligned && p.v_aligned && p.k_s0 >= 0 && p.k_s0 <= row_limit &&
           p.v_s0 >= 0 && p.v_s0 <= row_limit;
}

template <int DMAX, bool QPLANES, bool LONG, bool ASYNC, int SRC>
static sy_status sy_attn_gpu_prefill_mma_launch_src(const sy_attn_gpu_prefill &p, dim3 grid, gpuStream_t stream,
                                                    sy_error *err)
{
    using S = sy_attn_prefill_mma_shape<DMAX, QPLANES, LONG, ASYNC>;
    sy_attn_gpu_prefill call = p;
    sy_attn_prefill_tma_maps maps;
    memset(&maps, 0, sizeof maps);
    call.tma_tiles = 0;
    if constexpr (sy_attn_prefill_tma_source<S, SRC> && SRC == SY_PREFILL_SRC_PAGED_5D) {
        /* a page of KT keys holds head h's K and V tiles as the pool stores them: copied without a
         * map (the pools are 16-byte aligned: sy_attn_gpu_prefill_mma_takes) */
        call.tma_tiles = p.head_dim == DMAX && p.dims.head_dim == DMAX && p.dims.page_size == S::KT;
    } else if constexpr (sy_attn_prefill_tma_source<S, SRC>) {
        /* bytes from one head, one row to the next: linear rows' strides, or nhd's pool [slots][H][D],
         * whose slots are the rows where a tile is a page's */
        constexpr bool LINEAR = SRC == SY_PREFILL_SRC_LINEAR;
        const uint64_t es = 2, H = p.kv_heads, pool_row = H * DMAX * es;
        const uint64_t k_head = LINEAR ? (uint64_t)p.k_s1 * es : DMAX * es, v_head = LINEAR ? (uint64_t)p.v_s1 * es : DMAX * es;
        const uint64_t k_row = LINEAR ? (uint64_t)p.k_s0 * es : pool_row, v_row = LINEAR ? (uint64_t)p.v_s0 * es : pool_row;
        const bool pages_ok = LINEAR || (p.dims.head_dim == DMAX && p.dims.page_size % S::KT == 0);
        call.tma_tiles = p.head_dim == DMAX && pages_ok && p.k_rows > 0 && p.k_rows <= INT32_MAX &&
                         sy_tma_map_bf16_3d(&maps.k, p.k, DMAX, H, (uint64_t)p.k_rows, k_head, k_row, DMAX, S::KT) &&
                         sy_tma_map_bf16_3d(&maps.v, p.v, DMAX, H, (uint64_t)p.k_rows, v_head, v_row, DMAX, S::KT);
    }
    /* Past 48 KB of shared memory a kernel must opt in, per device: set on every launch. */
    if (S::SMEM_BYTES > 48 * 1024)
        SY_GPU_CHECKF(err,
                      cudaFuncSetAttribute(sy_attn_gpu_prefill_mma_kernel<DMAX, QPLANES, LONG, ASYNC, SRC>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES),
                      "for %d bytes of shared memory", S::SMEM_BYTES);
    SY_GPU_LAUNCH(grid, SY_ATTN_GPU_THREADS, S::SMEM_BYTES, stream,
                  sy_attn_gpu_prefill_mma_kernel<DMAX, QPLANES, LONG, ASYNC, SRC>)(call, maps);
    return SY_OK;
}

/* The variant for the call's K/V source: linear rows, or pages (never LONG, whose 128-key tiles
 * span two 64-token pages). */
template <int DMAX, bool QPLANES, bool LONG, bool ASYNC>
static sy_status sy_attn_gpu_prefill_mma_launch_as(const sy_attn_gpu_prefill &p, dim3 grid, gpuStream_t stream,
                                                   sy_error *err)
{
    if constexpr (!LONG) {
        if (p.block_tables && p.dims.layout == SY_LAYOUT_VECTORIZED_5D)
            return sy_attn_gpu_prefill_mma_launch_src<DMAX, QPLANES, LONG, ASYNC, SY_PREFILL_SRC_PAGED_5D>(p, grid, stream,
                                                                                                       err);
        if (p.block_tables)
            return sy_attn_gpu_prefill_mma_launch_src<DMAX, QPLANES, LONG, ASYNC, SY_PREFILL_SRC_PAGED>(p, grid, stream,
                                                                                                    err);
    }
    return sy_attn_gpu_prefill_mma_launch_src<DMAX, QPLANES, LONG, ASYNC, SY_PREFILL_SRC_LINEAR>(p, grid, stream, err);
}

/* long_rows: sy_attn_gpu_prefill_mma_long's answer, which the grid's rows were sized by;
 * warpgroup: sy_wgmma_runs_on's answer for the device, where the 64-key variant takes
 * the warpgroup products at head dim 64 with bf16 q (an f32 q's two bf16 planes do not fit its
 * stage) for every row length.
 * History. LONG ran on the warpgroup products first (sessions 17-18: its 128-key tile as two
 * 64-key parts whose softmax and products overlapped; 1 x 8192 1.45 ms against 2.07-2.09 ms on
 * mma.sync, H100), since the 64-key variant gave wrong outputs there: q's A fragments, held in
 * registers for the call, shared registers (R88-R103 in its SASS) with P's fragments, so every
 * tile after the first multiplied K by the previous tile's P (rel L2 1.1-1.4 on H200s and H100s
 * where a row spans several tiles; the emulator, which keeps C++ variables, passed; a compiler
 * hold on q before the products did not help). Read from shared memory every tile, q and P may
 * share registers, as the products are waited for before P is packed: the 64-key kernel then took
 * (H100 80GB, one process, three rounds against LONG on wgmma) 1 x 8192 1404-1426 against
 * 1431-1505 us, 8 x 2048 879-893 against 950-966 us, the extend chunk 107-111 against 116-119 us,
 * and window 128 (two rounds against the 64-key mma.sync kernel) 193 against 206-213 us at 1 x
 * 8192, 351-358 against 394-396 us at 8 x 2048. Its 4 blocks an SM (128 registers, no spill) hide
 * a block's fixed cost better than LONG's 3, and a causal row's last tile wastes half as much. */
static inline sy_status sy_attn_gpu_prefill_mma_launch(const sy_attn_gpu_prefill &p, int dmax, bool long_rows,
                                                       bool warpgroup, dim3 grid, gpuStream_t stream, sy_error *err)
{
    const bool planes = p.c.io_dtype == SY_DTYPE_F32;
#if defined(SY_CUDA_SM90A) || defined(SY_EMU_TENSOR_CORES)
    if (warpgroup && dmax == 64 && !planes)
        return sy_attn_gpu_prefill_mma_launch_as<64, false, false, true>(p, grid, stream, err);
#else
    (void)warpgroup;
#endif
    if (long_rows)
        return sy_attn_gpu_prefill_mma_launch_as<64, false, true, false>(p, grid, stream, err);
    if (dmax == 64)
        return planes ? sy_attn_gpu_prefill_mma_launch_as<64, true, false, false>(p, grid, stream, err)
                      : sy_attn_gpu_prefill_mma_launch_as<64, false, false, false>(p, grid, stream, err);
    return planes ? sy_attn_gpu_prefill_mma_launch_as<128, true, false, false>(p, grid, stream, err)
                  : sy_attn_gpu_prefill_mma_launch_as<128, false, false, false>(p, grid, stream, err);
}

#endif
