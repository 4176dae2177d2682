/* Picks the toolkit for GPU code written once: the build compiles every GPU source twice, with
 * SY_VENDOR_CUDA (nvcc) and with SY_VENDOR_HIP (hipcc, or a C compiler against the HIP headers).
 * Code uses the gpu* runtime names and the sy_shfl* / SY_WARP_SIZE device names of the chosen
 * vendor_*.h, never cuda* or hip* directly. */
#ifndef SY_VENDOR_H
#define SY_VENDOR_H

#if defined(SY_VENDOR_CUDA) && defined(SY_VENDOR_HIP)
#error "vendor.h: SY_VENDOR_CUDA and SY_VENDOR_HIP are both defined; a source is built for one toolkit at a time"
#elif defined(SY_VENDOR_CUDA)
#include "vendor_cuda.h"
#elif defined(SY_VENDOR_HIP)
#include "vendor_hip.h"
#else
#error "vendor.h: define SY_VENDOR_CUDA or SY_VENDOR_HIP (the GPU build targets do)"
#endif

/* Sizing for per-block scratch that holds one value per warp: 1024 threads at the smallest warp. */
#define SY_MAX_WARPS_PER_BLOCK 32

#endif
