/* kv_nhd (cpu): the SGLang default KV layout, K and V each (pages * P, H, D), slot-major.
 *
 * Default page size 16: nhd has no vector rule on P, and 16 keeps the per-sequence padding small
 * while still amortizing one block-table lookup over 16 tokens (vLLM's default block size too).
 * vectorized_5d, whose kernels want larger pages, defaults to 64. */
#include "kv_plugin_cpu.h"

#ifdef SY_PLUGIN_BACKEND_GPU
#include "kv_plugin_gpu.h"

extern const sy_kv_layout_ops sy_kv_nhd_gpu_ops; /* gpu.cu */

SY_KV_GPU_DEFINE_PLUGIN("kv_nhd", SY_LAYOUT_NHD, 0, 16, sy_kv_nhd_gpu_ops,
                        "NHD KV pool (pages*P, H, D) on the GPU: f32/bf16/fp8_e4m3 store, fp8 scales, SWA slot map");
#else
extern const sy_kv_layout_ops sy_kv_nhd_cpu_ops; /* cpu.c */

SY_KV_CPU_DEFINE_PLUGIN("kv_nhd", SY_LAYOUT_NHD, 0, 16, sy_kv_nhd_cpu_ops,
                        "NHD KV pool (pages*P, H, D) on the host: f32/bf16/fp8_e4m3 store, fp8 scales, SWA slot map");
#endif
