/* bf16 products on Hopper's warpgroup tensor cores (wgmma.mma_async, sm_90a only), for the CUDA
 * kernels that have a variant for them. A warpgroup (4 warps, 128 threads) computes one 64 x N x 16
 * product with A in registers and B in shared memory; the instruction returns at once and the
 * accumulators are written when the group it was committed with is waited for.
 *
 * Fragments (PTX ISA, "Register Fragments" of wgmma .m64nNk16): warp w of the group holds rows
 * 16w .. 16w + 15, and within them the layouts of mma.sync m16n8k16 (mma_bf16_cuda.cuh): A as its
 * A fragment; the f32 accumulator as its C fragments of n-tiles 0 .. N/8 - 1 side by side, d[j] of
 * n-tile j. So a kernel's mma.sync m-tile of 16 rows a warp maps onto one wgmma a warpgroup.
 *
 * B in shared memory (PTX ISA, "Shared Memory Matrix Layout", 128-byte swizzle): rows of exactly
 * 128 bytes, the 16-byte piece p of row r stored at piece p ^ (r % 8), the tile 1024-byte aligned.
 * K-major B (rows along N, K contiguous: a K tile of [key][64 dims] for S = Q K^T) steps k by 32
 * bytes within the rows; N-major B (rows along K, N contiguous: a V tile of [key][64 dims] for
 * O = P V, transposed) steps k by 16 rows. In both, the descriptor's stride byte offset is the
 * 1024 bytes from one group of 8 rows to the next, and the leading byte offset is unused (one
 * swizzle width along K, or along an N of 64).
 *
 * K-major B without swizzle (PTX ISA, the canonical layout of swizzle mode 0): core matrices of 8
 * rows (along N) x 16 bytes (8 elements along K), each 128 contiguous bytes; the stride byte offset
 * steps from one core matrix to the next along N, the leading byte offset along K. That is how the
 * vectorized_5d pool stores K (pieces of 8 dims, a piece's keys contiguous) and V (groups of 8
 * keys, a group's dims contiguous), so its tiles go into shared memory in the pool's own order.
 *
 * Ordering: wgmma reads shared memory through the async proxy, so data a thread wrote there
 * (st.shared or cp.async) needs sy_fence_proxy_async() before the barrier that publishes it.
 * Registers: sy_wgmma_fence() before the first product of a batch (after other instructions wrote
 * its accumulators or A fragments), sy_wgmma_commit() after the last, sy_wgmma_wait<0>() before
 * reading the results. The compiler knows none of this and moves register arithmetic across asm
 * statements, so sy_wgmma_hold() pins the registers a batch touches on both sides: before the
 * fence (the writes of its accumulators and A fragments land before it) and after the wait (no
 * accumulator is read, nor an A register reused, before it).
 *
 * tests/gpu's CPU emulator (SY_EMU_TENSOR_CORES) supplies the products, from these layouts, and
 * their groups: a product is done at the wait that retires it, and one whose accumulators or A
 * fragment change while it is in flight is reported. Fences and holds are nothing there. */
#ifndef SY_WGMMA_BF16_CUDA_CUH
#define SY_WGMMA_BF16_CUDA_CUH

#include <stdint.h>

#include <type_traits>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SY_WGMMA_DEVICE 1
#else
#define SY_WGMMA_DEVICE 0
#endif

/* Whether this build runs the warpgroup products on a device of compute capability
 * cc_major.cc_minor: only sm_90a code has them (SY_CUDA_SM90A, cmake/gpu.cmake), and only an sm_90
 * device runs sm_90a code; tests/gpu's emulator runs them as such a build on an H200 would. Host
 * code, for the kernels' launch choice. */
static inline bool sy_wgmma_runs_on(uint32_t cc_major, uint32_t cc_minor)
{
#if defined(SY_EMU_TENSOR_CORES)
    (void)cc_major, (void)cc_minor;
    return true;
#elif defined(SY_CUDA_SM90A)
    return cc_major == 9 && cc_minor == 0;
#else
    (void)cc_major, (void)cc_minor;
    return false;
#endif
}

/* The descriptor of an operand at `tile` (PTX ISA, "Matrix Descriptor Format"): start address,
 * leading and stride byte offsets in 16-byte units at bits 0, 16 and 32, the swizzle mode at bits
 * 62-63 (0: none, 1: 128 bytes). */
static __device__ __forceinline__ uint64_t sy_wgmma_desc(const void *tile, uint32_t leading, uint32_t stride,
                                                         uint32_t swizzle)
{
    const uint32_t at = (uint32_t)__cvta_generic_to_shared(tile);
    return (uint64_t)((at & 0x3FFFFu) >> 4) | (uint64_t)(leading >> 4) << 16 | (uint64_t)(stride >> 4) << 32 |
           (uint64_t)swizzle << 62;
}

/* A 128-byte-swizzled operand: groups of 8 rows 1024 bytes apart (the leading offset unused). */
static __device__ __forceinline__ uint64_t sy_wgmma_desc_sw128(const void *tile)
{
    return sy_wgmma_desc(tile, 16, 1024, 1);
}

/* An unswizzled K-major operand (16-byte aligned): core matrices `along_k` bytes apart along K
 * (the leading byte offset) and `along_n` bytes apart along N (the stride byte offset). */
static __device__ __forceinline__ uint64_t sy_wgmma_desc_kmajor(const void *tile, uint32_t along_k, uint32_t along_n)
{
    return sy_wgmma_desc(tile, along_k, along_n, 0);
}

/* The descriptor of the operand `bytes` (a multiple of 16) past the one `desc` describes: an add to
 * the start address field, which cannot carry out of its 14 bits while both lie in shared memory
 * (under 256 KB). One add where sy_wgmma_desc_sw128 costs four uniform instructions a product. */
static __device__ __forceinline__ uint64_t sy_wgmma_desc_advance(uint64_t desc, uint32_t bytes)
{
    return desc + (bytes >> 4);
}

/* Byte offset of 16-byte piece `piece` of row `row` in a 128-byte-swizzled tile. */
static __host__ __device__ __forceinline__ constexpr int sy_wgmma_sw128_offset(int row, int piece)
{
    return row * 128 + ((piece ^ (row & 7)) << 4);
}

static __device__ __forceinline__ void sy_wgmma_fence(void)
{
#if SY_WGMMA_DEVICE
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

static __device__ __forceinline__ void sy_wgmma_commit(void)
{
#if SY_WGMMA_DEVICE
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#elif defined(SY_EMU_TENSOR_CORES)
    sy_emu_wgmma_commit();
#endif
}

/* Waits until at most PENDING committed groups of this warpgroup are unfinished. */
template <int PENDING>
static __device__ __forceinline__ void sy_wgmma_wait(void)
{
#if SY_WGMMA_DEVICE
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
#elif defined(SY_EMU_TENSOR_CORES)
    sy_emu_wgmma_wait(PENDING);
#endif
}

/* Makes the compiler treat each register (f32 or 32-bit) as read and written here, by no
 * instruction. */
template <class T, int N, int M>
static __device__ __forceinline__ void sy_wgmma_hold(T (&r)[N][M])
{
    static_assert(sizeof(T) == 4, "32-bit registers");
#if defined(SY_EMU_TENSOR_CORES)
    (void)r; /* the emulator tracks the registers itself; and "f" is an x87 register to g++ */
#else
#pragma unroll
    for (int i = 0; i < N; i++)
#pragma unroll
        for (int j = 0; j < M; j++) {
            if constexpr (std::is_same<T, float>::value)
                asm volatile("" : "+f"(r[i][j])::"memory");
            else
                asm volatile("" : "+r"(r[i][j])::"memory");
        }
#endif
}

/* Orders this thread's earlier generic-proxy writes to shared memory (st.shared, cp.async once
 * waited for) before later async-proxy reads (wgmma) that a barrier makes them visible to. */
static __device__ __forceinline__ void sy_fence_proxy_async(void)
{
#if SY_WGMMA_DEVICE
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/* d = a b (ACCUMULATE: d += a b) over a 64 x N x 16 tile (N 64 or 8), a in registers, b from
 * shared memory (TRANS_B: N-major). Without ACCUMULATE d's registers are only written, so the
 * compiler may reuse them until then. The accumulate flag goes in as a predicate (scale-d). */
template <int N, int TRANS_B, bool ACCUMULATE>
static __device__ __forceinline__ void sy_wgmma_m64k16(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t b)
{
    static_assert(N == 64 || N == 8, "the shapes the kernels take");
#if SY_WGMMA_DEVICE
#define SY_WGMMA_PRED(at) "{\n.reg .pred p;\n.reg .b32 t;\nmov.b32 t, %" at ";\nsetp.ne.b32 p, t, 0;\n"
#define SY_WGMMA_D4(acc, j) acc(d[j][0]), acc(d[j][1]), acc(d[j][2]), acc(d[j][3])
#define SY_WGMMA_M64N64K16(acc)                                                                     \
    asm volatile(SY_WGMMA_PRED("37") "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "         \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                             \
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "                  \
                 "{%32,%33,%34,%35}, %36, p, 1, 1, %38;\n}\n"                                         \
                 : SY_WGMMA_D4(acc, 0), SY_WGMMA_D4(acc, 1), SY_WGMMA_D4(acc, 2), SY_WGMMA_D4(acc, 3),  \
                   SY_WGMMA_D4(acc, 4), SY_WGMMA_D4(acc, 5), SY_WGMMA_D4(acc, 6), SY_WGMMA_D4(acc, 7)   \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE ? 1 : 0), "n"(TRANS_B))
#define SY_WGMMA_M64N8K16(acc)                                                                      \
    asm volatile(SY_WGMMA_PRED("9") "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "           \
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, %10;\n}\n"                              \
                 : SY_WGMMA_D4(acc, 0)                                                                 \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE ? 1 : 0), "n"(TRANS_B))
#define SY_WGMMA_READ_WRITE(x) "+f"(x)
#define SY_WGMMA_WRITE(x) "=f"(x)
    if constexpr (N == 64 && ACCUMULATE)
        SY_WGMMA_M64N64K16(SY_WGMMA_READ_WRITE);
    else if constexpr (N == 64)
        SY_WGMMA_M64N64K16(SY_WGMMA_WRITE);
    else if constexpr (ACCUMULATE)
        SY_WGMMA_M64N8K16(SY_WGMMA_READ_WRITE);
    else
        SY_WGMMA_M64N8K16(SY_WGMMA_WRITE);
#undef SY_WGMMA_WRITE
#undef SY_WGMMA_READ_WRITE
#undef SY_WGMMA_M64N8K16
#undef SY_WGMMA_M64N64K16
#undef SY_WGMMA_D4
#undef SY_WGMMA_PRED
#elif defined(SY_EMU_TENSOR_CORES)
    sy_emu_wgmma_bf16(&d[0][0], N, a, b, TRANS_B != 0, ACCUMULATE);
#else
    (void)d, (void)a, (void)b;
    __trap(); /* only the sm_90a kernels call it */
#endif
}

#endif
