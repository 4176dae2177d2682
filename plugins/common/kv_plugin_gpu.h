/* The descriptor of a GPU kv_layout plugin, for the cuda / hip build of a kv plugin's plugin.c
 * (SY_PLUGIN_BACKEND_GPU): kv_nhd and kv_vectorized_5d differ only in the values passed here, and
 * their ops tables come from SY_KV_GPU_DEFINE_OPS in their gpu.cu (kv_store_gpu.cuh).
 *
 * The caps equal the host plugins' (kv_plugin_cpu.h) because the GPU kernels serve the same store
 * dtypes (f32, bf16, fp8_e4m3), sources (f32, bf16 with any token and head stride), slot maps and
 * fp8 scales, and have no page size or head dim limit of their own below the host code's. */
#ifndef SY_KV_PLUGIN_GPU_H
#define SY_KV_PLUGIN_GPU_H

#include "kv_store_cpu.h"
#include "switchyard/plugin.h"

#define SY_KV_GPU_DEFINE_PLUGIN(plugin_name, layout_id, vector_bytes_, default_page_size_, ops_table, desc_text) \
    static const sy_kv_layout_caps sy_kv_gpu_caps = {                                                       \
        .struct_size = sizeof(sy_kv_layout_caps), .layout = layout_id,                                      \
        .store_dtypes = SY_KV_CPU_STORE_DTYPES, .src_dtypes = SY_KV_CPU_SRC_DTYPES,                         \
        .vector_bytes = vector_bytes_, .default_page_size = default_page_size_,                             \
        .max_page_size = 1u << 16, .max_head_dim = 1u << 12,                                                \
        .features = SY_KV_FEAT_SLOT_MAP | SY_KV_FEAT_FP8_SCALES | SY_KV_FEAT_ANY_TOKEN_STRIDE};             \
    static const sy_plugin_desc sy_kv_gpu_desc = {                                                          \
        .abi_major = SY_ABI_MAJOR, .abi_minor = SY_ABI_MINOR, .struct_size = sizeof(sy_plugin_desc),        \
        .kind = SY_KIND_KV_LAYOUT, .name = plugin_name, .backend = SY_PLUGIN_BACKEND_NAME,                  \
        .version = "1.0.0", .description = desc_text, .rank = 10,                                         \
        .caps = &sy_kv_gpu_caps, .ops = &ops_table};                                                        \
    static const sy_plugin_desc *const sy_kv_gpu_list[] = {&sy_kv_gpu_desc, NULL};                          \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor); \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) \
    {                                                                                                       \
        (void)host_abi_minor; /* the host rejects a newer minor itself, with a clearer message than NULL */ \
        return host_abi_major == SY_ABI_MAJOR ? sy_kv_gpu_list : NULL;                                      \
    }                                                                                                       \
    _Static_assert(sizeof(sy_kv_gpu_caps) == sizeof(sy_kv_layout_caps), "kv_layout caps record")

#endif
