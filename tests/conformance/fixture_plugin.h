/* Conformance fixture plugins: cpu plugins of this folder with one planted defect, narrowed caps or
 * deliberately lower precision. Most wrap an in-tree plugin, loaded from the build tree
 * (CONF_DELEGATE_FILE) on first use, and change one thing about its calls. */
#ifndef SY_CONF_FIXTURE_PLUGIN_H
#define SY_CONF_FIXTURE_PLUGIN_H

#include "switchyard/plugin.h"

#define CONF_FIXTURE_ENTRY(kind_, name_, caps_, ops_, init_, fini_)                                              \
    static const sy_plugin_desc conf_fixture_desc = {                                                           \
        .abi_major = SY_ABI_MAJOR,                                                                              \
        .abi_minor = SY_ABI_MINOR,                                                                              \
        .struct_size = sizeof(sy_plugin_desc),                                                                  \
        .kind = (kind_),                                                                                        \
        .name = (name_),                                                                                        \
        .backend = "cpu",                                                                                       \
        .version = "0.0.1",                                                                                     \
        .description = "conformance test fixture",                                                              \
        .rank = -100,                                                                                           \
        .caps = (caps_),                                                                                        \
        .ops = (ops_),                                                                                          \
        .init = (init_),                                                                                        \
        .fini = (fini_),                                                                                        \
    };                                                                                                          \
    static const sy_plugin_desc *const conf_fixture_list[] = {&conf_fixture_desc, NULL};                        \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);   \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor)    \
    {                                                                                                           \
        (void)host_abi_minor;                                                                                   \
        return host_abi_major == SY_ABI_MAJOR ? conf_fixture_list : NULL;                                       \
    }

/* Attention caps declaring everything the suite exercises (both in-tree layouts, every KV and q
 * dtype, any head dim and page size, every feature; prefill_paged where the fixture has it). */
#define CONF_ATTENTION_CAPS_ALL CONF_ATTENTION_CAPS_FEATURES(0u)
#define CONF_ATTENTION_CAPS_ALL_PAGED_PREFILL CONF_ATTENTION_CAPS_FEATURES(SY_ATTN_PREFILL_PAGED)
#define CONF_ATTENTION_CAPS_FEATURES(extra)                                                                     \
    {                                                                                                           \
        .struct_size = sizeof(sy_attention_caps),                                                               \
        .features = SY_ATTN_DECODE_PAGED | SY_ATTN_PREFILL_LINEAR | SY_ATTN_SLIDING_WINDOW | SY_ATTN_SINKS |    \
                    SY_ATTN_FP8_SCALES | SY_ATTN_SPLIT_K | SY_ATTN_ROW_STRIDE | (extra),                        \
        .n_layouts = 2, .layouts = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D},                                    \
        .kv_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3), \
        .q_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16), .head_dim_min = 1,                 \
        .head_dim_max = 1024, .head_dim_multiple = 1, .page_size_min = 1, .page_size_max = 1u << 16,            \
        .page_size_multiple = 1, .max_gqa_ratio = 256, .max_tp = 1                                              \
    }

/* The wrapped in-tree plugin's descriptor; NULL (with a message on stderr) when it cannot be loaded. */
const sy_plugin_desc *conf_delegate(void);

/* Context of a wrapping fixture: the in-tree plugin's own context beside its descriptor. */
typedef struct conf_wrapped {
    const sy_plugin_desc *desc;
    void *ctx;
} conf_wrapped;

/* init / fini of a wrapping fixture: the delegate's, inside a conf_wrapped. */
sy_status conf_wrapped_init(const sy_host_api *host, void **ctx, sy_error *err);
void conf_wrapped_fini(void *ctx);

#endif
