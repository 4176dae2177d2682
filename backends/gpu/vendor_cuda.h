/* The CUDA side of the vendor shim: the project's gpu* names for the CUDA runtime, and the device
 * intrinsics kernels use. Include vendor.h, not this file. vendor_hip.h defines the same names;
 * anything added here must be added there too.
 *
 * Host-only C sources see just the runtime API (cuda_runtime_api.h is plain C); .cu sources also
 * get the device side. */
#ifndef SY_VENDOR_CUDA_H
#define SY_VENDOR_CUDA_H

#include <cuda_runtime_api.h>
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

#include "vendor_names.h"

/* errors */
typedef cudaError_t gpuError_t;
#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuErrorNotReady cudaErrorNotReady
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuPeekAtLastError cudaPeekAtLastError

/* devices */
typedef struct cudaDeviceProp gpuDeviceProp_t;
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
/* Forces the device's context into existence so that later failures are not blamed on a copy. */
#define gpuInitDeviceContext() cudaFree(0)

/* memory */
typedef enum cudaMemcpyKind gpuMemcpyKind;
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice

/* streams and events */
typedef cudaStream_t gpuStream_t;
typedef cudaEvent_t gpuEvent_t;
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime

/* device side */
#if defined(__CUDACC__)
/* A compile-time warp width for loop bounds and array sizes; at run time warpSize agrees. */
#define SY_WARP_SIZE 32
#define sy_shfl_xor(value, lane_mask) __shfl_xor_sync(0xffffffffu, (value), (lane_mask))
#define sy_shfl(value, src_lane) __shfl_sync(0xffffffffu, (value), (src_lane))
#define sy_shfl_down(value, delta) __shfl_down_sync(0xffffffffu, (value), (delta))
#define sy_syncwarp() __syncwarp()
#endif

#endif
