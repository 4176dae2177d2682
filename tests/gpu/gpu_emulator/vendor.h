/* The CPU emulator's stand-in for backends/gpu/vendor.h, first on the include path of the
 * emulated checks (check_kv_attn_emu*, check_moe_norm_linear_emu*), so that the GPU plugins'
 * kernels (written in the portable CUDA dialect) compile as plain C++ and run on the host: each
 * thread of a block is a fiber, a barrier switches between them (gpu_emulator.cc), shuffles
 * exchange through the block, and the warp width is SY_EMU_WARP_SIZE (the build makes one program
 * for 32 and one for 64). It exists to run the kernels' index math against the cpu plugins where
 * no GPU is, not to be fast. */
#ifndef SY_VENDOR_H
#define SY_VENDOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SY_GPU_BACKEND_NAME "emu"
#define SY_GPU_RUNTIME_NAME "emulator"
#define SY_MAX_WARPS_PER_BLOCK 32

typedef int gpuError_t;
typedef void *gpuStream_t;
typedef void *gpuEvent_t;
#define gpuSuccess 0
#define gpuErrorMemoryAllocation 2
static inline gpuError_t gpuGetLastError(void)
{
    return gpuSuccess;
}
/* Device memory is host memory here, and every call runs to its end before it returns. */
static inline gpuError_t gpuMemsetAsync(void *dst, int value, size_t bytes, gpuStream_t stream)
{
    (void)stream;
    memset(dst, value, bytes);
    return gpuSuccess;
}
static inline const char *gpuGetErrorName(gpuError_t status)
{
    return status ? "emuError" : "emuSuccess";
}
static inline const char *gpuGetErrorString(gpuError_t status)
{
    return status ? "emulator error" : "no error";
}

#if defined(__cplusplus)
#include <functional>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint4 {
    unsigned x, y, z, w;
};
struct uint2 {
    unsigned x, y;
};
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
static inline float4 make_float4(float x, float y, float z, float w)
{
    return float4{x, y, z, w};
}
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
    return uint4{x, y, z, w};
}
static inline uint2 make_uint2(unsigned x, unsigned y)
{
    return uint2{x, y};
}
static inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float __int_as_float(int i)
{
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
/* The emulator runs one thread at a time and switches only at barriers: a plain update is atomic. */
template <class T>
static inline T atomicAdd(T *address, T value)
{
    const T old = *address;
    *address = old + value;
    return old;
}
template <class T>
static inline T atomicMin(T *address, T value)
{
    const T old = *address;
    *address = value < old ? value : old;
    return old;
}
template <class T>
static inline T atomicMax(T *address, T value)
{
    const T old = *address;
    *address = value > old ? value : old;
    return old;
}
/* CUDA's integer min and max, plain functions in its dialect. */
static inline int min(int a, int b)
{
    return a < b ? a : b;
}
static inline unsigned min(unsigned a, unsigned b)
{
    return a < b ? a : b;
}
static inline int max(int a, int b)
{
    return a > b ? a : b;
}
static inline unsigned max(unsigned a, unsigned b)
{
    return a > b ? a : b;
}
/* Built with -ffp-contract=off: plain operations round on their own, as these must. */
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}
static inline float __fadd_rn(float a, float b)
{
    return a + b;
}
static inline float __fsub_rn(float a, float b)
{
    return a - b;
}

extern dim3 sy_emu_thread_idx, sy_emu_block_idx, sy_emu_block_dim, sy_emu_grid_dim;
#define threadIdx sy_emu_thread_idx
#define blockIdx sy_emu_block_idx
#define blockDim sy_emu_block_dim
#define gridDim sy_emu_grid_dim

void sy_emu_syncthreads(void);
void sy_emu_syncwarp(void);
/* A value of up to 8 bytes from lane (this lane ^ lane_mask), bit for bit, as CUDA's and HIP's
 * shuffles of every such type. */
uint64_t sy_emu_shfl_xor_bits(uint64_t bits, int lane_mask);
template <class T>
static inline T sy_emu_shfl_xor(T value, int lane_mask)
{
    static_assert(sizeof(T) <= sizeof(uint64_t), "shuffles move up to 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &value, sizeof value);
    bits = sy_emu_shfl_xor_bits(bits, lane_mask);
    T out;
    memcpy(&out, &bits, sizeof out);
    return out;
}
void *sy_emu_dynamic_shared(void);
size_t sy_emu_shared_address(const void *p);
#define __syncthreads() sy_emu_syncthreads()
#define SY_WARP_SIZE SY_EMU_WARP_SIZE
#define sy_shfl_xor(value, lane_mask) sy_emu_shfl_xor((value), (lane_mask))
#define sy_syncwarp() sy_emu_syncwarp()
#define SY_GPU_DYNAMIC_SHARED(type, name) type *name = (type *)sy_emu_dynamic_shared()
/* The emulated dynamic shared memory starts 16 bytes past a 1024-byte boundary (gpu_emulator.cc). */
#define SY_GPU_DYNAMIC_SHARED_ALIGNED(type, name, bytes) \
    static_assert((bytes) <= 16, "the emulator aligns dynamic shared memory to 16 bytes"); \
    type *name = (type *)sy_emu_dynamic_shared()
/* The shared address of a pointer into the dynamic shared memory, with a GPU's alignment. */
static inline size_t __cvta_generic_to_shared(const void *p)
{
    return sy_emu_shared_address(p);
}
#define __syncwarp() sy_emu_syncwarp()
/* The CUDA opt-in past 48 KB of dynamic shared memory: the emulator has no such limit. */
#define cudaFuncAttributeMaxDynamicSharedMemorySize 0
template <class Kernel>
static inline gpuError_t cudaFuncSetAttribute(Kernel, int, int)
{
    return gpuSuccess;
}

/* Integer intrinsics, as the CUDA Math API defines them. */
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned selector)
{
    const unsigned long long both = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++)
        r |= (unsigned)(both >> (8 * ((selector >> (4 * i)) & 7u)) & 0xFFu) << (8 * i);
    return r;
}
static inline unsigned __vcmpeq2(unsigned a, unsigned b)
{
    return ((a & 0xFFFFu) == (b & 0xFFFFu) ? 0xFFFFu : 0u) | ((a >> 16) == (b >> 16) ? 0xFFFF0000u : 0u);
}

#if SY_EMU_WARP_SIZE == 32
/* Tensor-core fragments exist for warps of 32: mma_bf16_cuda.cuh and cp_async_cuda.cuh call these
 * (gpu_emulator.cc), and the kernels that use them are built. */
#define SY_EMU_TENSOR_CORES 1
void sy_emu_ldmatrix_x4(uint32_t r[4], const void *row, bool trans);
void sy_emu_mma_bf16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
void sy_emu_mma_f16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
uint16_t sy_emu_f32_to_f16(float x); /* rounded to nearest even */
/* wgmma m64nNk16 with bf16 inputs (wgmma_bf16_cuda.cuh): this warp's 16 rows, d its n / 8
 * accumulator fragments. */
void sy_emu_wgmma_bf16(float *d, unsigned n, const uint32_t a[4], uint64_t b_desc, bool trans_b, bool accumulate);
/* wgmma.commit_group and wgmma.wait_group: products are done at the wait that retires them. */
void sy_emu_wgmma_commit(void);
void sy_emu_wgmma_wait(int pending);
/* CUDA's intrinsics over the lanes of a mask, which the emulator takes whole warps for. */
void sy_emu_whole_warp(unsigned mask);
static inline float __shfl_xor_sync(unsigned mask, float value, int lane_mask)
{
    sy_emu_whole_warp(mask);
    return sy_emu_shfl_xor(value, lane_mask);
}
long long sy_emu_reduce_sync(unsigned mask, long long value, bool max);
static inline int __reduce_min_sync(unsigned mask, int value)
{
    return (int)sy_emu_reduce_sync(mask, value, false);
}
static inline int __reduce_max_sync(unsigned mask, int value)
{
    return (int)sy_emu_reduce_sync(mask, value, true);
}
static inline unsigned __reduce_min_sync(unsigned mask, unsigned value)
{
    return (unsigned)sy_emu_reduce_sync(mask, value, false);
}
static inline unsigned __reduce_max_sync(unsigned mask, unsigned value)
{
    return (unsigned)sy_emu_reduce_sync(mask, value, true);
}
static inline int __any_sync(unsigned mask, int predicate)
{
    return (int)sy_emu_reduce_sync(mask, predicate != 0, true);
}
#endif

namespace sy_emu {
/* Runs body once per thread of every block of the grid, blocks one after the other. */
void run(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()> &body);

template <class Kernel>
struct launcher {
    dim3 grid, block;
    size_t shared_bytes;
    Kernel kernel;
    template <class... Args>
    void operator()(Args... args) const
    {
        run(grid, block, shared_bytes, [&] { kernel(args...); });
    }
};

template <class Kernel>
launcher<Kernel> launch(dim3 grid, dim3 block, size_t shared_bytes, gpuStream_t, Kernel kernel)
{
    return launcher<Kernel>{grid, block, shared_bytes, kernel};
}
} // namespace sy_emu

#define SY_GPU_LAUNCH(grid, block, shared_bytes, stream, ...) \
    sy_emu::launch(dim3(grid), dim3(block), (shared_bytes), (stream), __VA_ARGS__)
#endif

#endif
