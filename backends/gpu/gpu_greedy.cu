/* Greedy tokens on the device: one block per row of logits, each thread reducing its strided share
 * of the row by the order of sy_greedy.h, then the warps, then the block. The order is total, so the
 * grouping does not change the index, and it is the host's index bit for bit. */
/* vendor.h first: it brings the toolkit runtime that defines the qualifiers sy_portable.h uses. */
#include "vendor.h"

#include "gpu_greedy.h"
#include "sy_greedy.h"

enum { GREEDY_THREADS = 1024 };

struct greedy_pick {
    float value;
    uint32_t index;
};

static __device__ __forceinline__ void greedy_offer(greedy_pick &p, float v, uint32_t i)
{
    if (sy_greedy_prefers(v, i, p.value, p.index)) {
        p.value = v;
        p.index = i;
    }
}

static __device__ __forceinline__ greedy_pick greedy_warp(greedy_pick p)
{
    for (int lane_mask = SY_WARP_SIZE / 2; lane_mask > 0; lane_mask /= 2) {
        const float v = sy_shfl_xor(p.value, lane_mask);
        const uint32_t i = sy_shfl_xor(p.index, lane_mask);
        greedy_offer(p, v, i);
    }
    return p;
}

__global__ void __launch_bounds__(GREEDY_THREADS) sy_greedy_rows_kernel(const float *x, uint32_t cols,
                                                                         uint64_t row_stride, uint32_t *out)
{
    __shared__ greedy_pick warp_picks[SY_MAX_WARPS_PER_BLOCK];
    const float *row = x + (uint64_t)blockIdx.x * row_stride;
    greedy_pick p = {__int_as_float(0x7FC00000), 0u};
    /* 16-byte loads over the aligned body of the row; the few elements before and after it one by
     * one (a row starts anywhere a float may). */
    uint32_t head = (uint32_t)((16u - ((uintptr_t)row % 16u)) % 16u / 4u);
    head = head < cols ? head : cols;
    const uint32_t quads = (cols - head) / 4u, tail = head + 4u * quads;
    const float4 *body = (const float4 *)(row + head);
    for (uint32_t q = threadIdx.x; q < quads; q += blockDim.x) {
        const float4 v = body[q];
        const uint32_t i = head + 4u * q;
        greedy_offer(p, v.x, i);
        greedy_offer(p, v.y, i + 1u);
        greedy_offer(p, v.z, i + 2u);
        greedy_offer(p, v.w, i + 3u);
    }
    if (threadIdx.x < head)
        greedy_offer(p, row[threadIdx.x], threadIdx.x);
    if (tail + threadIdx.x < cols)
        greedy_offer(p, row[tail + threadIdx.x], tail + threadIdx.x);

    p = greedy_warp(p);
    const uint32_t lane = threadIdx.x % SY_WARP_SIZE, warp = threadIdx.x / SY_WARP_SIZE;
    if (lane == 0)
        warp_picks[warp] = p;
    __syncthreads();
    if (warp == 0) {
        const uint32_t warps = blockDim.x / SY_WARP_SIZE;
        greedy_pick q = {__int_as_float(0x7FC00000), 0u};
        if (lane < warps)
            q = warp_picks[lane];
        q = greedy_warp(q);
        if (lane == 0)
            out[blockIdx.x] = q.index;
    }
}

extern "C" int sy_gpu_greedy_rows(void *stream, const float *x, uint32_t rows, uint32_t cols, uint64_t row_stride,
                                  uint32_t *out)
{
    if (rows == 0)
        return (int)gpuSuccess;
    sy_greedy_rows_kernel<<<rows, GREEDY_THREADS, 0, (gpuStream_t)stream>>>(x, cols, row_stride, out);
    return (int)gpuGetLastError();
}
