/* linear (cpu): y = x W^T + b, f32 or bf16 weights and activations, f32 accumulation in OpenBLAS. */
#include "cpu.h"

static const sy_linear_caps caps = {
    .struct_size = sizeof(sy_linear_caps),
    .weight_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .act_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .has_bias = 1,
};

static const sy_plugin_desc desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_LINEAR,
    .name = "linear",
    .backend = "cpu",
    .version = "1.0.0",
    .description = "y = x W^T + b through OpenBLAS sgemm, f32 or bf16 weights, f32 accumulation",
    .rank = 0,
    .caps = &caps,
    .ops = &sy_linear_cpu_ops,
    .init = sy_linear_cpu_init,
    .fini = sy_linear_cpu_fini,
};

static const sy_plugin_desc *const descriptors[] = {&desc, NULL};

SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor;
    return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;
}
