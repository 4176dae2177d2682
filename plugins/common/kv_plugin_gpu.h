/* The descriptor of a GPU kv_layout plugin, for the GPU builds of a kv plugin's plugin.c
 * (SY_PLUGIN_BACKEND_GPU): kv_nhd and kv_vectorized_5d differ only in the values passed here. In
 * the device library the ops table is the plugin's gpu.cu one (SY_KV_GPU_DEFINE_OPS,
 * kv_store_gpu.cuh); in the front (sy_gpu_front.h) geometry is the host function both use and
 * write / gather forward to the device library, which the front's init opens.
 *
 * The caps equal the host plugins' (kv_plugin_cpu.h) because the GPU kernels serve the same store
 * dtypes (f32, bf16, fp8_e4m3), sources (f32, bf16 with any token and head stride), slot maps and
 * fp8 scales, and have no page size or head dim limit of their own below the host code's. */
#ifndef SY_KV_PLUGIN_GPU_H
#define SY_KV_PLUGIN_GPU_H

#include "kv_store_cpu.h"
#include "switchyard/plugin.h"

#if defined(SY_PLUGIN_GPU_FRONT)
#include "sy_gpu_front.h"
#define SY_KV_GPU_LIBRARY(plugin_name, layout_id, ops_table)                                                \
    static sy_status sy_kv_front_geometry(sy_kv_geometry *geom, sy_error *err)                              \
    {                                                                                                       \
        return sy_kv_cpu_geometry(layout_id, geom, err);                                                    \
    }                                                                                                       \
    SY_GPU_FRONT_KV_OPS(sy_kv_front_ops, sy_kv_front_geometry);                                             \
    SY_GPU_FRONT_INIT(sy_kv_front_init, SY_KIND_KV_LAYOUT, plugin_name)
#define SY_KV_GPU_OPS(ops_table) sy_kv_front_ops
#define SY_KV_GPU_INIT sy_kv_front_init
#define SY_KV_GPU_FINI sy_gpu_front_fini
#else
#include "sy_plugin_role.h"
#define SY_KV_GPU_LIBRARY(plugin_name, layout_id, ops_table)
#define SY_KV_GPU_OPS(ops_table) ops_table
#define SY_KV_GPU_INIT NULL
#define SY_KV_GPU_FINI NULL
#endif

#define SY_KV_GPU_DEFINE_PLUGIN(plugin_name, layout_id, vector_bytes_, default_page_size_, ops_table, desc_text) \
    SY_KV_GPU_LIBRARY(plugin_name, layout_id, ops_table)                                                    \
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
        .caps = &sy_kv_gpu_caps, .ops = &SY_KV_GPU_OPS(ops_table), .init = SY_KV_GPU_INIT,                  \
        .fini = SY_KV_GPU_FINI};                                                                            \
    static const sy_plugin_desc *const sy_kv_gpu_list[] = {&sy_kv_gpu_desc, NULL};                          \
    SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor); \
    SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor) \
    {                                                                                                       \
        (void)host_abi_minor; /* the host rejects a newer minor itself, with a clearer message than NULL */ \
        return host_abi_major == SY_ABI_MAJOR ? sy_kv_gpu_list : NULL;                                      \
    }                                                                                                       \
    _Static_assert(sizeof(sy_kv_gpu_caps) == sizeof(sy_kv_layout_caps), "kv_layout caps record")

#endif
