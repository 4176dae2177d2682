/* rope_yarn (cpu): NeoX RoPE with gpt-oss's YaRN scaling and concentration, with a fused rotation +
 * K/V store for both KV layouts. */
#include "cpu.h"
#include "kv_store_cpu.h"

static const sy_rope_caps caps = {
    .struct_size = sizeof(sy_rope_caps),
    .styles = SY_ROPE_STYLE_NEOX,
    .scalings = SY_ROPE_SCALING_YARN | SY_ROPE_SCALING_NONE,
    .head_dim_max = SY_ROPE_YARN_CPU_MAX_HEAD_DIM,
    .n_fused_kv_layouts = 2,
    .fused_kv_layouts = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D},
    .fused_kv_dtypes = SY_KV_CPU_STORE_DTYPES,
    .dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
};

static const sy_plugin_desc desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_ROPE,
    .name = "rope_yarn",
    .backend = "cpu",
    .version = "1.0.0",
    .description = "NeoX RoPE with YaRN and concentration (gpt-oss), fused K/V store for nhd and vectorized_5d",
    .rank = 0,
    .caps = &caps,
    .ops = &sy_rope_yarn_cpu_ops,
};

static const sy_plugin_desc *const descriptors[] = {&desc, NULL};

SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor;
    return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;
}
