/* Asynchronous 16-byte copies from global to shared memory (cp.async, sm_80 and newer), for the
 * CUDA-only kernels that keep a ring of stages in flight while they compute on the oldest. */
#ifndef SY_CP_ASYNC_CUDA_CUH
#define SY_CP_ASYNC_CUDA_CUH

/* 16 bytes global -> shared without a register round trip; `bytes` 0 writes zeros and reads nothing. */
static __device__ __forceinline__ void sy_cp_async16(void *dst, const void *src, int bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes));
#elif defined(SY_EMU_TENSOR_CORES)
    /* tests/gpu's CPU emulator: the copy lands at once, so every wait is already met. */
    memset(dst, 0, 16);
    memcpy(dst, src, (size_t)bytes);
#else
    (void)dst, (void)src, (void)bytes;
    __trap(); /* the build refuses architectures below sm_80 (cmake/gpu.cmake) */
#endif
}

/* Closes the group of copies issued since the last commit. */
static __device__ __forceinline__ void sy_cp_async_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits until at most PENDING groups of this thread are still in flight. */
template <int PENDING>
static __device__ __forceinline__ void sy_cp_async_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#endif
}

#endif
