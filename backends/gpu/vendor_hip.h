/* The HIP side of the vendor shim: the project's gpu* names for the ROCm HIP runtime, and the device
 * intrinsics kernels use. Include vendor.h, not this file. vendor_cuda.h defines the same names;
 * anything added here must be added there too.
 *
 * Host-only C sources see just the runtime API (hip_runtime_api.h is plain C once a platform macro
 * is set; the build passes __HIP_PLATFORM_AMD__); .cu sources compiled by hipcc also get the device
 * side. Written against HIP 5.2 (Debian), which has no *_sync shuffles and no __syncwarp. */
#ifndef SY_VENDOR_HIP_H
#define SY_VENDOR_HIP_H

#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_HCC__)
#error "vendor_hip.h: compile with -D__HIP_PLATFORM_AMD__ (hipcc sets it; the build sets it for C sources)"
#endif

#include <hip/hip_runtime_api.h>
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#endif

#include "vendor_names.h"

/* errors */
typedef hipError_t gpuError_t;
#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuErrorNotReady hipErrorNotReady
#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError

/* devices */
typedef hipDeviceProp_t gpuDeviceProp_t;
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuRuntimeGetVersion hipRuntimeGetVersion
/* Forces the device's context into existence so that later failures are not blamed on a copy. */
#define gpuInitDeviceContext() hipFree(0)

/* memory */
typedef hipMemcpyKind gpuMemcpyKind;
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemGetInfo hipMemGetInfo
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice

/* streams and events */
typedef hipStream_t gpuStream_t;
typedef hipEvent_t gpuEvent_t;
#define gpuStreamCreate hipStreamCreate
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime

/* device side */
#if defined(__HIPCC__)
/* 64 on CDNA (gfx90a, gfx94x), 32 on RDNA: the compiler knows it per target. */
#define SY_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
/* A wavefront runs in lockstep, so the shuffles need no member mask. */
#define sy_shfl_xor(value, lane_mask) __shfl_xor((value), (lane_mask))
#define sy_shfl(value, src_lane) __shfl((value), (src_lane))
#define sy_shfl_down(value, delta) __shfl_down((value), (delta))
/* Only keeps the compiler from moving memory accesses across it; the hardware needs nothing. */
#define sy_syncwarp() __builtin_amdgcn_wave_barrier()
#endif

#endif
