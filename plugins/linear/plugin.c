/* linear (cpu): y = x W^T + b, f32 or bf16 weights and activations, f32 accumulation in OpenBLAS. */
#include "args.h"
#include "cpu.h"

#include "sy_plugin_role.h"

#if defined(SY_PLUGIN_BACKEND_GPU)
/* The cuda and hip libraries (gpu.cu): the same caps; cuBLAS on cuda, a portable tiled kernel on hip. */
#include "gpu.h"
#if defined(SY_PLUGIN_GPU_FRONT)
#include "sy_gpu_front.h"
SY_GPU_FRONT_INIT(linear_front_init, SY_KIND_LINEAR, "linear")
#define LINEAR_OPS sy_gpu_front_linear_ops
#define LINEAR_INIT linear_front_init
#define LINEAR_FINI sy_gpu_front_fini
#if defined(SY_PLUGIN_BACKEND_CUDA)
SY_GPU_FRONT_INIT(linear_tiled_front_init, SY_KIND_LINEAR, "linear_tiled")
#define LINEAR_TILED_OPS sy_gpu_front_linear_ops
#define LINEAR_TILED_INIT linear_tiled_front_init
#endif
#else
#define LINEAR_OPS sy_linear_gpu_ops
#define LINEAR_INIT sy_linear_gpu_init
#define LINEAR_FINI sy_linear_gpu_fini
#define LINEAR_TILED_OPS sy_linear_gpu_tiled_ops
#define LINEAR_TILED_INIT sy_linear_gpu_init
#endif
#if defined(SY_PLUGIN_BACKEND_CUDA)
#define LINEAR_SUMMARY "y = x W^T + b through cuBLAS (cublasGemmEx), f32 or bf16 weights, f32 accumulation"
#else
#define LINEAR_SUMMARY "y = x W^T + b, portable tiled kernel (no BLAS in this ROCm), f32 accumulation"
#endif
#else
#define LINEAR_OPS sy_linear_cpu_ops
#define LINEAR_INIT sy_linear_cpu_init
#define LINEAR_FINI sy_linear_cpu_fini
#define LINEAR_SUMMARY "y = x W^T + b through OpenBLAS sgemm, f32 or bf16 weights, f32 accumulation"
#endif

static const sy_linear_caps caps = {
    .struct_size = sizeof(sy_linear_caps),
    .weight_dtypes = SY_LINEAR_DTYPES,
    .act_dtypes = SY_LINEAR_DTYPES,
    .has_bias = 1,
    .features = SY_LINEAR_SPLIT_Y,
};

static const sy_plugin_desc desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_LINEAR,
    .name = "linear",
    .backend = SY_PLUGIN_BACKEND_NAME,
    .version = "1.0.0",
    .description = LINEAR_SUMMARY,
    .rank = 0,
    .caps = &caps,
    .ops = &LINEAR_OPS,
    .init = LINEAR_INIT,
    .fini = LINEAR_FINI,
};

#if defined(SY_PLUGIN_BACKEND_CUDA)
/* The hip library's kernel, built for cuda so that it is tested on a real GPU; `auto` takes it only where
 * `linear` cannot serve. */
static const sy_plugin_desc tiled_desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_LINEAR,
    .name = "linear_tiled",
    .backend = SY_PLUGIN_BACKEND_NAME,
    .version = "1.0.0",
    .description = "y = x W^T + b, the portable tiled kernel of the hip library, f32 accumulation",
    .rank = -1000,
    .caps = &caps,
    .ops = &LINEAR_TILED_OPS,
    .init = LINEAR_TILED_INIT,
    .fini = LINEAR_FINI,
};

static const sy_plugin_desc *const descriptors[] = {&desc, &tiled_desc, NULL};
#else
static const sy_plugin_desc *const descriptors[] = {&desc, NULL};
#endif

SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor;
    return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;
}
