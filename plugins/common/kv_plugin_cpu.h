/* The descriptor, caps and ops table of a host kv_layout plugin, with the layout as the parameter:
 * kv_nhd and kv_vectorized_5d differ only in the values passed here. */
#ifndef SY_KV_PLUGIN_CPU_H
#define SY_KV_PLUGIN_CPU_H

#include "kv_store_cpu.h"
#include "switchyard/plugin.h"

/* Defines `const sy_kv_layout_ops ops_name` serving one layout with kv_store_cpu.c. */
#define SY_KV_CPU_DEFINE_OPS(ops_name, layout_id)                                                           \
    static sy_status ops_name##_geometry(sy_kv_geometry *geom, sy_error *err)                               \
    {                                                                                                       \
        return sy_kv_cpu_geometry(layout_id, geom, err);                                                    \
    }                                                                                                       \
    static sy_status ops_name##_write(void *ctx, sy_stream stream, const sy_kv_write_args *args, sy_error *err) \
    {                                                                                                       \
        (void)ctx;                                                                                          \
        (void)stream;                                                                                       \
        return sy_kv_cpu_write(layout_id, args, err);                                                       \
    }                                                                                                       \
    static sy_status ops_name##_gather(void *ctx, sy_stream stream, const sy_kv_gather_args *args,          \
                                       sy_error *err)                                                       \
    {                                                                                                       \
        (void)ctx;                                                                                          \
        (void)stream;                                                                                       \
        return sy_kv_cpu_gather(layout_id, args, err);                                                      \
    }                                                                                                       \
    const sy_kv_layout_ops ops_name = {sizeof(sy_kv_layout_ops), 0, ops_name##_geometry, ops_name##_write,   \
                                       ops_name##_gather}

/* Defines the caps, the descriptor and the exported sy_plugin_entry of a host kv_layout plugin.
 * vector_bytes: 0 for no vector rule, 16 for X = 16 / store bytes. Page sizes up to 2^16 and head
 * dims up to 2^12: the host code has no limit of its own below int32 slot numbers. */
#define SY_KV_CPU_DEFINE_PLUGIN(plugin_name, layout_id, vector_bytes_, default_page_size_, ops_table, desc_text) \
    static const sy_kv_layout_caps sy_kv_plugin_caps = {                                                    \
        .struct_size = sizeof(sy_kv_layout_caps),                                                           \
        .layout = layout_id,                                                                                \
        .store_dtypes = SY_KV_CPU_STORE_DTYPES,                                                             \
        .src_dtypes = SY_KV_CPU_SRC_DTYPES,                                                                 \
        .vector_bytes = vector_bytes_,                                                                      \
        .default_page_size = default_page_size_,                                                            \
        .max_page_size = 1u << 16,                                                                          \
        .max_head_dim = 1u << 12,                                                                           \
        .features = SY_KV_FEAT_SLOT_MAP | SY_KV_FEAT_FP8_SCALES | SY_KV_FEAT_ANY_TOKEN_STRIDE,              \
    };                                                                                                      \
    static const sy_plugin_desc sy_kv_plugin_desc = {                                                       \
        .abi_major = SY_ABI_MAJOR,                                                                          \
        .abi_minor = SY_ABI_MINOR,                                                                          \
        .struct_size = sizeof(sy_plugin_desc),                                                              \
        .kind = SY_KIND_KV_LAYOUT,                                                                          \
        .name = plugin_name,                                                                                \
        .backend = "cpu",                                                                                   \
        .version = "1.0.0",                                                                                 \
        .description = desc_text,                                                                           \
        .rank = 10,                                                                                         \
        .caps = &sy_kv_plugin_caps,                                                                         \
        .ops = &ops_table,                                                                                  \
    };                                                                                                      \
    static const sy_plugin_desc *const sy_kv_plugin_list[] = {&sy_kv_plugin_desc, NULL};                   \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor); \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) \
    {                                                                                                       \
        (void)host_abi_minor; /* the host rejects a newer minor itself, with a clearer message than NULL */ \
        return host_abi_major == SY_ABI_MAJOR ? sy_kv_plugin_list : NULL;                                   \
    }                                                                                                       \
    _Static_assert(sizeof(sy_kv_plugin_caps) == sizeof(sy_kv_layout_caps), "kv_layout caps record")

#endif
