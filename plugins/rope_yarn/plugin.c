/* rope_yarn (cpu): NeoX RoPE with gpt-oss's YaRN scaling and concentration, with a fused rotation +
 * K/V store for both KV layouts. */
#include "cpu.h"
#include "kv_store_cpu.h"

#include "sy_plugin_role.h"

#if defined(SY_PLUGIN_GPU_FRONT)
#include "sy_gpu_front.h"
SY_GPU_FRONT_INIT(rope_yarn_front_init, SY_KIND_ROPE, "rope_yarn")
#define ROPE_YARN_OPS sy_gpu_front_rope_ops
#define ROPE_YARN_INIT rope_yarn_front_init
#define ROPE_YARN_FINI sy_gpu_front_fini
#elif defined(SY_PLUGIN_BACKEND_GPU)
/* gpu.cu: the same ops and caps on the device. */
extern const sy_rope_ops sy_rope_yarn_gpu_ops;
sy_status sy_rope_yarn_gpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_rope_yarn_gpu_fini(void *ctx);
#define ROPE_YARN_OPS sy_rope_yarn_gpu_ops
#define ROPE_YARN_INIT sy_rope_yarn_gpu_init
#define ROPE_YARN_FINI sy_rope_yarn_gpu_fini
#else
#define ROPE_YARN_OPS sy_rope_yarn_cpu_ops
#define ROPE_YARN_INIT NULL
#define ROPE_YARN_FINI NULL
#endif

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
    .backend = SY_PLUGIN_BACKEND_NAME,
    .version = "1.0.0",
    .description = "NeoX RoPE with YaRN and concentration (gpt-oss), fused K/V store for nhd and vectorized_5d",
    .rank = 0,
    .caps = &caps,
    .ops = &ROPE_YARN_OPS,
    .init = ROPE_YARN_INIT,
    .fini = ROPE_YARN_FINI,
};

static const sy_plugin_desc *const descriptors[] = {&desc, NULL};

SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor;
    return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;
}
