/* norm_rmsnorm (cpu): RMSNorm, fused residual add, zero padding to a multiple (the add+RMSNorm+pad
 * that feeds a padded MXFP4 MoE). */
#include "args.h"
#include "cpu.h"

#include "sy_plugin_role.h"

#if defined(SY_PLUGIN_BACKEND_GPU)
/* The cuda and hip libraries: the same op and caps, run by gpu.cu. */
#include "gpu.h"
#define NORM_WHERE "on the GPU"
#if defined(SY_PLUGIN_GPU_FRONT)
#include "sy_gpu_front.h"
SY_GPU_FRONT_INIT(norm_front_init, SY_KIND_NORM, "norm_rmsnorm")
#define NORM_OPS sy_gpu_front_norm_ops
#define NORM_INIT norm_front_init
#define NORM_FINI sy_gpu_front_fini
#else
#define NORM_OPS sy_norm_rmsnorm_gpu_ops
#endif
#else
#define NORM_OPS sy_norm_rmsnorm_cpu_ops
#define NORM_WHERE "host reference"
#endif

static const sy_norm_caps caps = {
    .struct_size = sizeof(sy_norm_caps),
    .features = SY_NORM_RMSNORM | SY_NORM_FUSED_ADD | SY_NORM_PAD_TO_MULTIPLE,
    .dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .max_pad_multiple = SY_NORM_RMSNORM_MAX_PAD,
};

static const sy_plugin_desc desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_NORM,
    .name = "norm_rmsnorm",
    .backend = SY_PLUGIN_BACKEND_NAME,
    .version = "1.0.0",
    .description = "RMSNorm with fused residual add and zero padding, fp32 sums, " NORM_WHERE,
    .rank = 0,
    .caps = &caps,
    .ops = &NORM_OPS,
#if defined(NORM_INIT)
    .init = NORM_INIT,
    .fini = NORM_FINI,
#endif
};

static const sy_plugin_desc *const descriptors[] = {&desc, NULL};

SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor;
    return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;
}
