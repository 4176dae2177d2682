/* attn_paged (cpu): the reference attention of the project. decode_paged reads the nhd and the
 * vectorized_5d pools natively (through sy_kv_addr.h), with GQA, sliding window (W keys including
 * the current one), per-head sinks, fp8 K/V with per-tensor scales and split-K partitions combined
 * by log-sum-exp; prefill_linear runs ragged causal batches over contiguous K/V with the same
 * features, and prefill_paged the same batches over the pool's pages (a later chunk's prefix read
 * where it lies). Single-threaded; the arithmetic is in plugins/common/attn_cpu_core.h. */
#include "attn_paged.h"

#include "switchyard/plugin.h"
#include "sy_plugin_role.h"

#ifdef SY_PLUGIN_BACKEND_GPU
/* gpu.cu: the same ops on the device, for head dims up to 128 (the kernels' tile sizes). */
#define ATTN_PAGED_HEAD_DIM_MAX 128
#define ATTN_PAGED_DESCRIPTION "paged attention on the GPU: nhd + vectorized_5d, GQA, window, sinks, fp8, split-K"
#define ATTN_PAGED_PREFILL_PAGED SY_ATTN_PREFILL_PAGED
#if defined(SY_PLUGIN_GPU_FRONT)
#include "sy_gpu_front.h"
SY_GPU_FRONT_INIT(attn_paged_front_init, SY_KIND_ATTENTION, "attn_paged")
#define ATTN_PAGED_OPS sy_gpu_front_attention_ops
#define ATTN_PAGED_INIT attn_paged_front_init
#define ATTN_PAGED_FINI sy_gpu_front_fini
#else
extern const sy_attention_ops sy_attn_paged_gpu_ops;
sy_status sy_attn_paged_gpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_attn_paged_gpu_fini(void *ctx);
#define ATTN_PAGED_OPS sy_attn_paged_gpu_ops
#define ATTN_PAGED_INIT sy_attn_paged_gpu_init
#define ATTN_PAGED_FINI sy_attn_paged_gpu_fini
#endif
#else
#define ATTN_PAGED_OPS sy_attn_paged_cpu_ops
#define ATTN_PAGED_INIT sy_attn_paged_cpu_init
#define ATTN_PAGED_FINI sy_attn_paged_cpu_fini
#define ATTN_PAGED_HEAD_DIM_MAX 1024
#define ATTN_PAGED_DESCRIPTION "reference paged attention on the host: nhd + vectorized_5d, GQA, window, sinks, fp8, split-K"
#define ATTN_PAGED_PREFILL_PAGED SY_ATTN_PREFILL_PAGED
#endif

static const sy_attention_caps attn_paged_caps = {
    .struct_size = sizeof(sy_attention_caps),
    .features = SY_ATTN_DECODE_PAGED | SY_ATTN_PREFILL_LINEAR | SY_ATTN_SLIDING_WINDOW | SY_ATTN_SINKS |
                SY_ATTN_FP8_SCALES | SY_ATTN_SPLIT_K | SY_ATTN_ROW_STRIDE | ATTN_PAGED_PREFILL_PAGED,
    .n_layouts = 2,
    .layouts = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D},
    .kv_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3),
    .q_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16),
    .head_dim_min = 1,
    .head_dim_max = ATTN_PAGED_HEAD_DIM_MAX,
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
    .backend = SY_PLUGIN_BACKEND_NAME,
    .version = "1.0.0",
    .description = ATTN_PAGED_DESCRIPTION,
    .rank = 10,
    .caps = &attn_paged_caps,
    .ops = &ATTN_PAGED_OPS,
    .init = ATTN_PAGED_INIT,
    .fini = ATTN_PAGED_FINI,
};

static const sy_plugin_desc *const attn_paged_list[] = {&attn_paged_desc, NULL};

SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor);
SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor; /* the host rejects a newer minor itself, with a clearer message than NULL */
    return host_abi_major == SY_ABI_MAJOR ? attn_paged_list : NULL;
}
