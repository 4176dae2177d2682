/* attn_paged (cpu): the reference attention of the project. decode_paged reads the nhd and the
 * vectorized_5d pools natively (through sy_kv_addr.h), with GQA, sliding window (W keys including
 * the current one), per-head sinks, fp8 K/V with per-tensor scales and split-K partitions combined
 * by log-sum-exp; prefill_linear runs ragged causal batches over contiguous K/V with the same
 * features. Single-threaded; the arithmetic is in plugins/common/attn_cpu_core.h. */
#include "attn_paged.h"

#include "switchyard/plugin.h"

static const sy_attention_caps attn_paged_caps = {
    .struct_size = sizeof(sy_attention_caps),
    .features = SY_ATTN_DECODE_PAGED | SY_ATTN_PREFILL_LINEAR | SY_ATTN_SLIDING_WINDOW | SY_ATTN_SINKS |
                SY_ATTN_FP8_SCALES | SY_ATTN_SPLIT_K,
    .n_layouts = 2,
    .layouts = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D},
    .kv_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3),
    .q_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .head_dim_min = 1,
    .head_dim_max = 1024,
    .head_dim_multiple = 1,
    .page_size_min = 1,
    .page_size_max = 1u << 16,
    .page_size_multiple = 1,
    .max_gqa_ratio = 256,
    /* Tensor parallelism shards heads; this kernel's math is the same at any tp. */
    .max_tp = 1024,
};

static const sy_plugin_desc attn_paged_desc = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_plugin_desc),
    .kind = SY_KIND_ATTENTION,
    .name = "attn_paged",
    .backend = "cpu",
    .version = "1.0.0",
    .description = "reference paged attention on the host: nhd + vectorized_5d, GQA, window, sinks, fp8, split-K",
    .rank = 10,
    .caps = &attn_paged_caps,
    .ops = &sy_attn_paged_cpu_ops,
    .init = sy_attn_paged_cpu_init,
    .fini = sy_attn_paged_cpu_fini,
};

static const sy_plugin_desc *const attn_paged_list[] = {&attn_paged_desc, NULL};

SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor; /* the host rejects a newer minor itself, with a clearer message than NULL */
    return host_abi_major == SY_ABI_MAJOR ? attn_paged_list : NULL;
}
