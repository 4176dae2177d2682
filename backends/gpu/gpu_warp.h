/* Warp- and block-level reductions for kernels, written for any warp width (32 on NVIDIA, 64 on
 * CDNA): loop bounds come from SY_WARP_SIZE, lane and warp indices from it too. .cu sources only. */
#ifndef SY_GPU_WARP_H
#define SY_GPU_WARP_H

#include <math.h>

#include "vendor.h"

#if !defined(__CUDACC__) && !defined(__HIPCC__)
#error "gpu_warp.h holds device code: include it from .cu sources only"
#endif

/* Combining operations of the reductions below. */
struct sy_reduce_add {
    static constexpr float identity = 0.0f;
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct sy_reduce_max {
    static constexpr float identity = -INFINITY;
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/* 64-bit integer minimum and maximum (e.g. "are these slots one run": min == max of slot - lane). */
struct sy_reduce_min_i64 {
    __device__ __forceinline__ long long operator()(long long a, long long b) const { return a < b ? a : b; }
};
struct sy_reduce_max_i64 {
    __device__ __forceinline__ long long operator()(long long a, long long b) const { return a > b ? a : b; }
};

/* Butterfly reduction: every lane ends with the result over the warp. */
template <typename Op, typename T>
__device__ __forceinline__ T sy_warp_reduce(T value)
{
    for (int lane_mask = SY_WARP_SIZE / 2; lane_mask > 0; lane_mask /= 2)
        value = Op()(value, sy_shfl_xor(value, lane_mask));
    return value;
}

/* Reduction over the block; every thread gets the result. blockDim.x must be a multiple of
 * SY_WARP_SIZE and every thread of the block must call it (it has barriers). `scratch` holds one
 * float per warp. */
template <typename Op>
__device__ __forceinline__ float sy_block_reduce(float value, float *scratch)
{
    const int lane = (int)threadIdx.x % SY_WARP_SIZE;
    const int warp = (int)threadIdx.x / SY_WARP_SIZE;
    const int warps = (int)blockDim.x / SY_WARP_SIZE;
    value = sy_warp_reduce<Op>(value);
    __syncthreads();
    if (lane == 0)
        scratch[warp] = value;
    __syncthreads();
    value = lane < warps ? scratch[lane] : Op::identity;
    return sy_warp_reduce<Op>(value);
}

__device__ __forceinline__ float sy_warp_sum(float value)
{
    return sy_warp_reduce<sy_reduce_add>(value);
}

__device__ __forceinline__ float sy_block_sum(float value, float *scratch)
{
    return sy_block_reduce<sy_reduce_add>(value, scratch);
}

__device__ __forceinline__ float sy_block_max(float value, float *scratch)
{
    return sy_block_reduce<sy_reduce_max>(value, scratch);
}

#endif
