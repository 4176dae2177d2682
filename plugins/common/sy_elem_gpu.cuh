/* Element access for GPU kernels, CUDA and HIP alike: pool and activation element types as
 * compile-time tags (the sy_dtype values), 16-byte raw loads and stores, and the conversions between
 * them and f32 through the project's own bit-exact functions (sy_numeric.h), so that a GPU kernel
 * stores exactly the bytes the host plugins store.
 *
 * Raw pieces are uint4 (16 bytes): kernels move K/V in 16-byte accesses wherever a layout allows and
 * convert in registers. Narrower pieces (2, 4 or 8 bytes) travel in the low words of a uint4. */
#ifndef SY_ELEM_GPU_CUH
#define SY_ELEM_GPU_CUH

#if !defined(__CUDACC__) && !defined(__HIPCC__)
#error "sy_elem_gpu.cuh holds device code: include it from .cu sources only"
#endif

#include <stdint.h>

#include <type_traits>

#include "switchyard/tensor.h"
#include "sy_numeric.h"
#include "vendor.h"

#define SY_DEV __device__ __forceinline__

/* The other half of SY_GPU_LAUNCH_OVERLAPPED: returns once the kernel before this one on the stream
 * has finished and its writes are visible; at once when this kernel was launched the ordinary way. */
SY_DEV void sy_gpu_wait_for_previous_kernel()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* 1 in the compiler pass that builds host code. Tables of host function pointers (ops tables) are
 * defined in that pass only: hipcc's device pass would otherwise emit such a constant-initialized
 * object into device code, with references to host functions it cannot link. */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define SY_GPU_HOST_PASS 0
#define SY_GPU_HOST_TABLE(...) static_assert(true, "")
#else
#define SY_GPU_HOST_PASS 1
#define SY_GPU_HOST_TABLE(...) __VA_ARGS__
#endif

/* Kernel launches and dynamic shared memory go through these names, so that the kernels also
 * build for tests/gpu's CPU emulator of the dialect (which defines them first):
 *   SY_GPU_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...);
 *   SY_GPU_DYNAMIC_SHARED(float, name);   (a kernel's dynamic shared memory as name[])
 *   SY_GPU_DYNAMIC_SHARED_ALIGNED(uint8_t, name, 16);   (the same, declared `bytes`-aligned) */
#ifndef SY_GPU_LAUNCH
#define SY_GPU_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#endif
#ifndef SY_GPU_DYNAMIC_SHARED
#define SY_GPU_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
#ifndef SY_GPU_DYNAMIC_SHARED_ALIGNED
#define SY_GPU_DYNAMIC_SHARED_ALIGNED(type, name, bytes) extern __shared__ __align__(bytes) type name[]
#endif

/* A launch that may overlap the end of the kernel before it on the stream: with `overlap` on CUDA
 * (programmatic dependent launch, sm_90 and newer) the launched kernel's blocks are set up and
 * started while that kernel's last blocks still run, which hides most of a launch between two
 * short kernels; they must call sy_gpu_wait_for_previous_kernel() before they read anything that
 * kernel wrote. Otherwise (HIP, the emulator, older devices) an ordinary launch:
 *   SY_GPU_LAUNCH_OVERLAPPED(overlap, grid, block, shared_bytes, stream, kernel)(args...); */
#if defined(SY_VENDOR_CUDA) && defined(__NVCC__) && !defined(SY_GPU_LAUNCH_OVERLAPPED)
template <typename... Params>
struct sy_gpu_overlapped_launch {
    bool overlap;
    dim3 grid, block;
    size_t shared_bytes;
    cudaStream_t stream;
    void (*kernel)(Params...);
    template <typename... Args>
    void operator()(Args... args) const
    {
        if (!overlap) {
            kernel<<<grid, block, shared_bytes, stream>>>(args...);
            return;
        }
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr.val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t config = {};
        config.gridDim = grid;
        config.blockDim = block;
        config.dynamicSmemBytes = shared_bytes;
        config.stream = stream;
        config.attrs = &attr;
        config.numAttrs = 1;
        cudaLaunchKernelEx(&config, kernel, args...);
    }
};
template <typename... Params>
static inline sy_gpu_overlapped_launch<Params...> sy_gpu_launch_overlapped(bool overlap, dim3 grid, dim3 block,
                                                                           size_t shared_bytes, cudaStream_t stream,
                                                                           void (*kernel)(Params...))
{
    return sy_gpu_overlapped_launch<Params...>{overlap, grid, block, shared_bytes, stream, kernel};
}
#define SY_GPU_LAUNCH_OVERLAPPED(overlap, grid, block, shared_bytes, stream, ...) \
    sy_gpu_launch_overlapped((overlap), dim3(grid), dim3(block), (shared_bytes), (stream), __VA_ARGS__)
#elif !defined(SY_GPU_LAUNCH_OVERLAPPED)
#define SY_GPU_LAUNCH_OVERLAPPED(overlap, grid, block, shared_bytes, stream, ...) \
    SY_GPU_LAUNCH(grid, block, shared_bytes, stream, __VA_ARGS__)
#endif

/* Whether the current device takes overlapped launches: CUDA, compute capability 9.0 and newer.
 * Asked once a device and process. */
#if defined(SY_VENDOR_CUDA) && defined(__NVCC__)
#include <atomic>
static inline bool sy_gpu_overlap_supported()
{
    enum { DEVICES = 64 };
    static std::atomic<int> known[DEVICES]; /* 0 not asked yet, 1 no, 2 yes */
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= DEVICES)
        return false;
    int state = known[device].load(std::memory_order_relaxed);
    if (state == 0) {
        int major = 0;
        state = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9
                    ? 2
                    : 1;
        known[device].store(state, std::memory_order_relaxed);
    }
    return state == 2;
}
#else
static inline bool sy_gpu_overlap_supported()
{
    return false;
}
#endif

/* The launch of a kernel of a chain (the ops of a forward step follow each other on one stream):
 * overlapped where the device takes it, so that the launch and the blocks' setup hide behind the
 * end of the kernel before. Every kernel launched so calls sy_gpu_wait_for_previous_kernel()
 * before it touches global memory. H200: the decode attention's combine kernel 31.6 -> 29.5 us;
 * the gpt-oss-120b decode step (batch 128, about 20 such kernels a layer) 34.4-34.5 -> 33.8 ms. */
#define SY_GPU_LAUNCH_CHAINED(grid, block, shared_bytes, stream, ...) \
    SY_GPU_LAUNCH_OVERLAPPED(sy_gpu_overlap_supported(), grid, block, shared_bytes, stream, __VA_ARGS__)

/* Bytes of an element type used as a template tag: f32 4, bf16 2, fp8_e4m3 1. */
template <int DT>
constexpr int sy_elem_size = DT == SY_DTYPE_F32 ? 4 : DT == SY_DTYPE_BF16 ? 2 : 1;

/* Elements of DT in 16 bytes. */
template <int DT>
constexpr int sy_elems16 = 16 / sy_elem_size<DT>;

template <int ES>
using sy_raw_elem = std::conditional_t<ES == 4, uint32_t, std::conditional_t<ES == 2, uint16_t, uint8_t>>;

/* fp8_e4m3 code -> f32, equal bit for bit to sy_fp8e4m3_to_f32 for all 256 codes, without its
 * branches: the code's exponent and mantissa bits moved to the bottom of an f32's exponent field
 * read as 2^-120 times the value (an f32 subnormal for the fp8 subnormals; exact either way), and
 * one multiplication by 2^120 restores it. Relies on f32 subnormals being kept, which both
 * toolkits do without fast-math flags. */
SY_DEV float sy_gpu_fp8_to_f32(uint32_t code)
{
    const uint32_t mag = code & 0x7Fu;
    uint32_t bits = __float_as_uint(__uint_as_float(mag << 20) * 0x1p120f);
    bits = mag == 0x7Fu ? 0x7FC00000u : bits;
    return __uint_as_float(bits | ((code & 0x80u) << 24));
}

SY_DEV float sy_gpu_bf16_to_f32(uint32_t h)
{
    return __uint_as_float(h << 16);
}

/* One element of DT from its raw bits. */
template <int DT>
SY_DEV float sy_gpu_decode(uint32_t raw)
{
    if constexpr (DT == SY_DTYPE_F32)
        return __uint_as_float(raw);
    else if constexpr (DT == SY_DTYPE_BF16)
        return sy_gpu_bf16_to_f32(raw & 0xFFFFu);
    else
        return sy_gpu_fp8_to_f32(raw & 0xFFu);
}

/* The store rule of the pools (kv_store_cpu.h): f32 as is, bf16 rounded to nearest even, fp8 as
 * fp8_e4m3(x / scale) with a true division. Returns the element's raw bits. */
template <int DT>
SY_DEV uint32_t sy_gpu_encode(float x, float scale)
{
    if constexpr (DT == SY_DTYPE_F32) {
        (void)scale;
        return __float_as_uint(x);
    } else if constexpr (DT == SY_DTYPE_BF16) {
        (void)scale;
        return sy_f32_to_bf16(x);
    } else {
        return sy_f32_to_fp8e4m3(x / scale);
    }
}

/* Word w of a uint4 (w a compile-time constant after unrolling). */
SY_DEV uint32_t sy_word(const uint4 &v, int w)
{
    return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}

SY_DEV void sy_set_word(uint4 &v, int w, uint32_t x)
{
    if (w == 0)
        v.x = x;
    else if (w == 1)
        v.y = x;
    else if (w == 2)
        v.z = x;
    else
        v.w = x;
}

/* Raw bits of element e of a 16-byte piece of DT. */
template <int DT>
SY_DEV uint32_t sy_raw_at(const uint4 &v, int e)
{
    constexpr int ES = sy_elem_size<DT>;
    const uint32_t w = sy_word(v, e * ES / 4);
    if constexpr (ES == 4)
        return w;
    else
        return (w >> (8 * ((e * ES) % 4))) & ((1u << (8 * ES)) - 1u);
}

/* Elements q*4 .. q*4+3 of a 16-byte piece, as f32 (q < 16 / (4 * bytes)). */
template <int DT>
SY_DEV void sy_unpack4(const uint4 &v, int q, float *out)
{
#pragma unroll
    for (int e = 0; e < 4; e++)
        out[e] = sy_gpu_decode<DT>(sy_raw_at<DT>(v, q * 4 + e));
}

/* The first n (<= 16 / bytes) elements of a 16-byte piece, as f32. */
template <int DT, int N = sy_elems16<DT>>
SY_DEV void sy_unpack(const uint4 &v, float *out)
{
#pragma unroll
    for (int e = 0; e < N; e++)
        out[e] = sy_gpu_decode<DT>(sy_raw_at<DT>(v, e));
}

/* N values encoded into the low N * bytes of a 16-byte piece. */
template <int DT, int N = sy_elems16<DT>>
SY_DEV uint4 sy_pack(const float *x, float scale)
{
    constexpr int ES = sy_elem_size<DT>;
    static_assert(N * ES <= 16, "sy_pack: more than 16 bytes");
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int e = 0; e < N; e++) {
        const int w = e * ES / 4, shift = 8 * ((e * ES) % 4);
        sy_set_word(v, w, sy_word(v, w) | (sy_gpu_encode<DT>(x[e], scale) << shift));
    }
    return v;
}

/* BYTES (1, 2, 4, 8 or 16) at p, aligned to min(BYTES, 16), into the low bytes of a uint4. */
template <int BYTES>
SY_DEV uint4 sy_ld_raw(const void *p)
{
    if constexpr (BYTES == 16) {
        return *(const uint4 *)p;
    } else if constexpr (BYTES == 8) {
        const uint2 x = *(const uint2 *)p;
        return make_uint4(x.x, x.y, 0u, 0u);
    } else if constexpr (BYTES == 4) {
        return make_uint4(*(const uint32_t *)p, 0u, 0u, 0u);
    } else if constexpr (BYTES == 2) {
        return make_uint4(*(const uint16_t *)p, 0u, 0u, 0u);
    } else {
        static_assert(BYTES == 1, "sy_ld_raw: 1, 2, 4, 8 or 16 bytes");
        return make_uint4(*(const uint8_t *)p, 0u, 0u, 0u);
    }
}

template <int BYTES>
SY_DEV void sy_st_raw(void *p, const uint4 &v)
{
    if constexpr (BYTES == 16) {
        *(uint4 *)p = v;
    } else if constexpr (BYTES == 8) {
        *(uint2 *)p = make_uint2(v.x, v.y);
    } else if constexpr (BYTES == 4) {
        *(uint32_t *)p = v.x;
    } else if constexpr (BYTES == 2) {
        *(uint16_t *)p = (uint16_t)v.x;
    } else {
        static_assert(BYTES == 1, "sy_st_raw: 1, 2, 4, 8 or 16 bytes");
        *(uint8_t *)p = (uint8_t)v.x;
    }
}

/* Element i of a DT array (raw bits). */
template <int DT>
SY_DEV uint32_t sy_ld_elem_raw(const void *base, uint64_t i)
{
    return ((const sy_raw_elem<sy_elem_size<DT>> *)base)[i];
}

template <int DT>
SY_DEV void sy_st_elem_raw(void *base, uint64_t i, uint32_t raw)
{
    using R = sy_raw_elem<sy_elem_size<DT>>;
    ((R *)base)[i] = (R)raw;
}

/* n (<= 16 / bytes) consecutive elements of DT starting at element i, one by one (no alignment
 * needed), packed into a 16-byte piece; elements past n are zero. */
template <int DT>
SY_DEV uint4 sy_ld_elems_raw(const void *base, uint64_t i, int n)
{
    constexpr int ES = sy_elem_size<DT>;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int e = 0; e < sy_elems16<DT>; e++) {
        if (e < n) {
            const int w = e * ES / 4, shift = 8 * ((e * ES) % 4);
            sy_set_word(v, w, sy_word(v, w) | (sy_ld_elem_raw<DT>(base, i + e) << shift));
        }
    }
    return v;
}

/* Zeroes the elements of a 16-byte piece of DT outside [lo, hi). */
template <int DT>
SY_DEV uint4 sy_keep_elems(uint4 v, int lo, int hi)
{
    constexpr int ES = sy_elem_size<DT>;
#pragma unroll
    for (int e = 0; e < sy_elems16<DT>; e++) {
        if (e < lo || e >= hi) {
            const int w = e * ES / 4, shift = 8 * ((e * ES) % 4);
            const uint32_t mask = ES == 4 ? 0xFFFFFFFFu : ((1u << (8 * ES)) - 1u) << shift;
            sy_set_word(v, w, sy_word(v, w) & ~mask);
        }
    }
    return v;
}

/* Activations (q, out, K/V sources of a write) are f32 or bf16, chosen at run time: a uniform
 * branch in memory-bound kernels. */
SY_DEV float sy_gpu_load_act(const void *base, int32_t dtype, int64_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_gpu_bf16_to_f32(((const uint16_t *)base)[i]) : ((const float *)base)[i];
}

SY_DEV void sy_gpu_store_act(void *base, int32_t dtype, int64_t i, float x)
{
    if (dtype == SY_DTYPE_BF16)
        ((uint16_t *)base)[i] = sy_f32_to_bf16(x);
    else
        ((float *)base)[i] = x;
}

/* x rounded to what an activation tensor of `dtype` holds (bf16: nearest even). */
SY_DEV float sy_gpu_round_act(int32_t dtype, float x)
{
    return dtype == SY_DTYPE_BF16 ? sy_round_bf16(x) : x;
}

/* N consecutive activation elements from element i of a row. vec: the row pointer and i are
 * aligned to min(16, N * bytes), so whole 16-byte loads serve; otherwise element by element. Only
 * the first n are read (the rest are 0). */
template <int N, int DT>
SY_DEV void sy_gpu_load_act_run_as(const void *base, int64_t i, int n, bool vec, float *out)
{
    constexpr int ES = sy_elem_size<DT>, PER = sy_elems16<DT>;
    if (vec && n == N) {
        if constexpr (N * ES >= 16) {
#pragma unroll
            for (int piece = 0; piece < N / PER; piece++)
                sy_unpack<DT>(sy_ld_raw<16>((const char *)base + (i + piece * PER) * ES), out + piece * PER);
        } else {
            sy_unpack<DT, N>(sy_ld_raw<N * ES>((const char *)base + i * ES), out);
        }
        return;
    }
#pragma unroll
    for (int e = 0; e < N; e++)
        out[e] = e < n ? sy_gpu_decode<DT>(sy_ld_elem_raw<DT>(base, i + e)) : 0.0f;
}

template <int N>
SY_DEV void sy_gpu_load_act_run(const void *base, int32_t dtype, int64_t i, int n, bool vec, float *out)
{
    if (dtype == SY_DTYPE_BF16)
        sy_gpu_load_act_run_as<N, SY_DTYPE_BF16>(base, i, n, vec, out);
    else
        sy_gpu_load_act_run_as<N, SY_DTYPE_F32>(base, i, n, vec, out);
}

/* The inverse: N values stored (rounded to the dtype) at element i, vec as above. */
template <int N, int DT>
SY_DEV void sy_gpu_store_act_run_as(void *base, int64_t i, int n, bool vec, const float *x)
{
    constexpr int ES = sy_elem_size<DT>, PER = sy_elems16<DT>;
    if (vec && n == N) {
        if constexpr (N * ES >= 16) {
#pragma unroll
            for (int piece = 0; piece < N / PER; piece++)
                sy_st_raw<16>((char *)base + (i + piece * PER) * ES, sy_pack<DT>(x + piece * PER, 1.0f));
        } else {
            sy_st_raw<N * ES>((char *)base + i * ES, sy_pack<DT, N>(x, 1.0f));
        }
        return;
    }
#pragma unroll
    for (int e = 0; e < N; e++)
        if (e < n)
            sy_st_elem_raw<DT>(base, i + e, sy_gpu_encode<DT>(x[e], 1.0f));
}

template <int N>
SY_DEV void sy_gpu_store_act_run(void *base, int32_t dtype, int64_t i, int n, bool vec, const float *x)
{
    if (dtype == SY_DTYPE_BF16)
        sy_gpu_store_act_run_as<N, SY_DTYPE_BF16>(base, i, n, vec, x);
    else
        sy_gpu_store_act_run_as<N, SY_DTYPE_F32>(base, i, n, vec, x);
}

/* Host side: a tensor's data pointer and the given strides (in elements) all land on multiples of
 * `bytes`, so that every run starting at such a multiple can be moved in pieces of that size. */
static inline bool sy_gpu_aligned_to(size_t bytes, const void *data, size_t elem_bytes, int64_t stride_a,
                                     int64_t stride_b)
{
    return ((uintptr_t)data % bytes) == 0 && ((uint64_t)stride_a * elem_bytes) % bytes == 0 &&
           ((uint64_t)stride_b * elem_bytes) % bytes == 0;
}

/* The same for 16-byte pieces. */
static inline bool sy_gpu_aligned16(const void *data, size_t elem_bytes, int64_t stride_a, int64_t stride_b)
{
    return sy_gpu_aligned_to(16, data, elem_bytes, stride_a, stride_b);
}

#endif
