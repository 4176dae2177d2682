/* The CPU emulator's own primitives against what CUDA and HIP define (tests/gpu/gpu_emulator.cc):
 * sy_shfl_xor moves a lane's value of any type of up to 8 bytes to its partner bit for bit, as the
 * kernels rely on for integers (a batch's tile counts, expert ids) as well as floats. Built at
 * both warp widths; prints one line a check and exits non-zero on a failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* What lane `lane` holds before the shuffles: values a float round trip would change (integers
 * past 2^24, 64-bit ones, a NaN's payload). */
static __device__ __host__ uint32_t lane_u32(uint32_t lane)
{
    return 0xFFFFFF00u + lane;
}
static __device__ __host__ uint64_t lane_u64(uint32_t lane)
{
    return (uint64_t)lane << 40 | 0x0123456789ull;
}
static __device__ __host__ uint32_t lane_nan_bits(uint32_t lane)
{
    return 0x7FC00000u | (lane + 1u);
}

/* mismatches[t]: how many of thread t's shuffles, over every lane mask, came back other than its
 * partner's value. */
static __global__ void shuffle_kernel(uint32_t *mismatches)
{
    const uint32_t lane = threadIdx.x % SY_WARP_SIZE;
    uint32_t bad = 0;
    for (int m = 1; m < SY_WARP_SIZE; m *= 2) {
        const uint32_t partner = lane ^ (uint32_t)m;
        float nan_in, nan_out;
        const uint32_t nan_bits = lane_nan_bits(lane);
        memcpy(&nan_in, &nan_bits, sizeof nan_in);
        const uint32_t a = sy_shfl_xor(lane_u32(lane), m);
        const uint64_t b = sy_shfl_xor(lane_u64(lane), m);
        const int32_t c = sy_shfl_xor(-(int32_t)lane - 1, m);
        nan_out = sy_shfl_xor(nan_in, m);
        uint32_t nan_got;
        memcpy(&nan_got, &nan_out, sizeof nan_got);
        bad += (a != lane_u32(partner)) + (b != lane_u64(partner)) + (c != -(int32_t)partner - 1) +
               (nan_got != lane_nan_bits(partner));
    }
    mismatches[threadIdx.x] = bad;
}

int main(void)
{
    enum { THREADS = 4 * SY_WARP_SIZE };
    uint32_t mismatches[THREADS];
    memset(mismatches, 0xFF, sizeof mismatches); /* poisoned: a thread that never wrote shows */
    SY_GPU_LAUNCH(1, THREADS, 0, NULL, shuffle_kernel)(mismatches);
    uint32_t total = 0;
    for (int t = 0; t < THREADS; t++)
        total += mismatches[t] != 0;
    printf("%s  emulator.shfl_xor/warp%d  u32 past 2^24, u64, i32, NaN payload: %u of %d threads wrong\n",
           total ? "FAIL" : "PASS", SY_WARP_SIZE, total, THREADS);
    return total ? 1 : 0;
}
