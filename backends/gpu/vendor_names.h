/* What is known about a GPU vendor without its runtime: the backend's name, the runtime's, and the
 * device node its kernel driver creates. Shared by the vendor shims (vendor_cuda.h, vendor_hip.h)
 * and by the backend front (gpu_backend_front.c), which is built without any runtime headers and
 * checks the node before it loads anything. */
#ifndef SY_VENDOR_NAMES_H
#define SY_VENDOR_NAMES_H

#if defined(SY_VENDOR_CUDA) && defined(SY_VENDOR_HIP)
#error "vendor_names.h: SY_VENDOR_CUDA and SY_VENDOR_HIP are both defined"
#elif defined(SY_VENDOR_CUDA)
#define SY_GPU_BACKEND_NAME "cuda"
#define SY_GPU_RUNTIME_NAME "CUDA"
/* Created by the NVIDIA kernel module; the CUDA driver library opens it before anything else. */
#define SY_GPU_DRIVER_NODE "/dev/nvidiactl"
#define SY_GPU_DRIVER_NAME "NVIDIA"
#elif defined(SY_VENDOR_HIP)
#define SY_GPU_BACKEND_NAME "hip"
#define SY_GPU_RUNTIME_NAME "HIP"
/* ROCm reaches the GPU only through the amdgpu driver's KFD interface. */
#define SY_GPU_DRIVER_NODE "/dev/kfd"
#define SY_GPU_DRIVER_NAME "AMD GPU"
#else
#error "vendor_names.h: define SY_VENDOR_CUDA or SY_VENDOR_HIP (the GPU build targets do)"
#endif

#endif
