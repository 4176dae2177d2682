/* Tiles copied by Hopper's tensor memory accelerator (TMA, sm_90: cp.async.bulk.tensor, and
 * cp.async.bulk for bytes already in the tile's order), completing on a shared-memory barrier
 * (mbarrier), for the CUDA kernels that keep a ring of tiles in flight.
 * One thread issues a tile's copy: the other threads spend no instructions on addresses, bounds or
 * the copies themselves (in the prefill's loop, cp.async copies by every thread were about a fifth
 * of its instructions).
 *
 * A tile is a box of a 3-d bf16 tensor [outer][middle][inner] (PTX ISA, "Tensor Data Movement";
 * CUDA driver API, cuTensorMapEncodeTiled): box_inner elements of one middle index for box_outer
 * consecutive outer indices, written to shared memory as box_outer rows of 128 bytes with the
 * 128-byte swizzle (the 16-byte piece p of row r at piece p ^ (r % 8), the tile 1024-byte
 * aligned): the layout wgmma_bf16_cuda.cuh reads as K-major or N-major B.
 *
 * Barrier phases: a stage's barrier completes a phase when its one arrival (the issuing thread's,
 * which also sets the bytes to expect) and all those bytes have landed; waiters pass the phase's
 * parity, which flips at each use of the stage.
 *
 * tests/gpu's CPU emulator (SY_EMU_TENSOR_CORES) copies the tile at once, with the swizzle's XOR of
 * the shared address bits 4-6 with bits 7-9, and its barriers are always complete. */
#ifndef SY_TMA_CUDA_CUH
#define SY_TMA_CUDA_CUH

#include <stdint.h>
#include <string.h>

#if defined(SY_EMU_TENSOR_CORES)
#define SY_TMA_BUILT 1
typedef struct sy_tma_map {
    const unsigned char *base;
    uint64_t dims[3];    /* inner, middle, outer elements */
    uint64_t strides[2]; /* bytes from one middle, one outer index to the next */
    uint32_t box_inner, box_outer;
} sy_tma_map;
#define SY_GRID_CONSTANT
#elif defined(SY_VENDOR_CUDA)
#include <cuda.h>
#include <cudaTypedefs.h>
#define SY_TMA_BUILT 1
typedef CUtensorMap sy_tma_map;
#define SY_GRID_CONSTANT __grid_constant__
#else
#define SY_TMA_BUILT 0
typedef struct sy_tma_map {
    int unused;
} sy_tma_map;
#define SY_GRID_CONSTANT
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(SY_EMU_TENSOR_CORES)
#define SY_TMA_DEVICE 1
#else
#define SY_TMA_DEVICE 0
#endif

/* The map of a bf16 tensor [outer][middle][inner] at base, for boxes of box_inner x 1 x box_outer
 * (box_inner * 2 bytes = 128, the swizzle's width). False where the driver lacks TMA or the
 * tensor breaks its rules: base 16-byte aligned, strides multiples of 16 bytes under 2^40 and
 * each at least the extent it steps over, every size at most 2^32. Host code. */
static inline bool sy_tma_map_bf16_3d(sy_tma_map *map, const void *base, uint64_t inner, uint64_t middle, uint64_t outer,
                                      uint64_t middle_stride, uint64_t outer_stride, uint32_t box_inner,
                                      uint32_t box_outer)
{
    const uint64_t limit = (uint64_t)1 << 40;
    if ((uintptr_t)base % 16 || middle_stride % 16 || outer_stride % 16 || middle_stride >= limit ||
        outer_stride >= limit || middle_stride < inner * 2 || outer_stride < middle_stride * middle ||
        inner > ((uint64_t)1 << 32) || middle > ((uint64_t)1 << 32) || outer > ((uint64_t)1 << 32) ||
        box_inner * 2 != 128 || box_outer == 0 || box_outer > 256)
        return false;
#if defined(SY_EMU_TENSOR_CORES)
    map->base = (const unsigned char *)base;
    map->dims[0] = inner, map->dims[1] = middle, map->dims[2] = outer;
    map->strides[0] = middle_stride, map->strides[1] = outer_stride;
    map->box_inner = box_inner, map->box_outer = box_outer;
    return true;
#elif defined(SY_VENDOR_CUDA)
    /* the driver's entry point, found once through the runtime (no link against libcuda) */
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void *fn = nullptr;
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
                cudaSuccess ||
            found != cudaDriverEntryPointSuccess)
            fn = nullptr;
        return (PFN_cuTensorMapEncodeTiled_v12000)fn;
    }();
    if (!encode)
        return false;
    const cuuint64_t dims[3] = {inner, middle, outer};
    const cuuint64_t strides[2] = {middle_stride, outer_stride};
    const cuuint32_t box[3] = {box_inner, 1, box_outer}, element_strides[3] = {1, 1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void *>(base), dims, strides, box,
                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
#else
    (void)map;
    return false;
#endif
}

static __device__ __forceinline__ uint32_t sy_tma_shared(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* One thread sets up the barrier of a stage (one arrival a phase) before any copy or wait uses it;
 * the fence makes it visible to the copies' async proxy. */
static __device__ __forceinline__ void sy_mbarrier_init(uint64_t *bar)
{
#if SY_TMA_DEVICE
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(sy_tma_shared(bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
    (void)bar;
#endif
}

/* The issuing thread's arrival, with the bytes the phase's copies will bring. */
static __device__ __forceinline__ void sy_mbarrier_expect_bytes(uint64_t *bar, uint32_t bytes)
{
#if SY_TMA_DEVICE
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(sy_tma_shared(bar)), "r"(bytes)
                 : "memory");
#else
    (void)bar, (void)bytes;
#endif
}

/* Waits until the phase of parity `parity` has completed. */
static __device__ __forceinline__ void sy_mbarrier_wait(uint64_t *bar, uint32_t parity)
{
#if SY_TMA_DEVICE
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(sy_tma_shared(bar)), "r"(parity)
                     : "memory");
    } while (!done);
#else
    (void)bar, (void)parity;
#endif
}

/* The box at (0, middle, outer) of `map` into dst (1024-byte aligned), completing on bar. */
static __device__ __forceinline__ void sy_tma_load_box(void *dst, const sy_tma_map *map, int32_t middle, int32_t outer,
                                                       uint64_t *bar)
{
#if SY_TMA_DEVICE
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
                 "[%2];\n" ::"r"(sy_tma_shared(dst)),
                 "l"((uint64_t)map), "r"(sy_tma_shared(bar)), "r"(0), "r"(middle), "r"(outer)
                 : "memory");
#elif defined(SY_EMU_TENSOR_CORES)
    (void)bar;
    unsigned char *const out = (unsigned char *)dst;
    const size_t at = __cvta_generic_to_shared(dst);
    for (uint32_t r = 0; r < map->box_outer; r++)
        for (uint32_t piece = 0; piece < map->box_inner / 8; piece++) {
            const size_t logical = at + r * 128 + piece * 16, physical = logical ^ ((logical >> 7 & 7u) << 4);
            const uint64_t row = (uint64_t)outer + r;
            if (row < map->dims[2] && (uint64_t)middle < map->dims[1])
                memcpy(out + (physical - at), map->base + row * map->strides[1] + (uint64_t)middle * map->strides[0] + piece * 16,
                       16);
            else
                memset(out + (physical - at), 0, 16); /* out of the tensor: zeros, as the hardware fills */
        }
#else
    (void)dst, (void)map, (void)middle, (void)outer, (void)bar;
    __trap();
#endif
}

/* `bytes` contiguous bytes (a multiple of 16, both addresses 16-byte aligned) from global src into
 * dst, completing on bar: a tile stored in the order the kernel reads it needs no map. */
static __device__ __forceinline__ void sy_bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
#if SY_TMA_DEVICE
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     sy_tma_shared(dst)),
                 "l"(src), "r"(bytes), "r"(sy_tma_shared(bar))
                 : "memory");
#elif defined(SY_EMU_TENSOR_CORES)
    (void)bar;
    memcpy(dst, src, bytes);
#else
    (void)dst, (void)src, (void)bytes, (void)bar;
    __trap();
#endif
}

#endif
