/* kv_vectorized_5d (cpu): the AITER / SGLang vectorized_5d KV layout, K (pages, H, D/X, P, X) and
 * V (pages, H, P/X, D, X) with X = 16 / store bytes, so that a GPU thread loads 16 bytes of one
 * page at a time. Default page size 64 (composition rule 1 of docs/config.md; SGLang's value for this layout). */
#include "kv_plugin_cpu.h"

#ifdef SY_PLUGIN_BACKEND_GPU
#include "kv_plugin_gpu.h"

extern const sy_kv_layout_ops sy_kv_5d_gpu_ops; /* gpu.cu */

SY_KV_GPU_DEFINE_PLUGIN("kv_vectorized_5d", SY_LAYOUT_VECTORIZED_5D, 16, 64, sy_kv_5d_gpu_ops,
                        "vectorized_5d KV pool (K: pages,H,D/X,P,X; V: pages,H,P/X,D,X) on the GPU, 16-byte stores");
#else
extern const sy_kv_layout_ops sy_kv_5d_cpu_ops; /* cpu.c */

SY_KV_CPU_DEFINE_PLUGIN("kv_vectorized_5d", SY_LAYOUT_VECTORIZED_5D, 16, 64, sy_kv_5d_cpu_ops,
                        "vectorized_5d KV pool (K: pages,H,D/X,P,X; V: pages,H,P/X,D,X) on the host, X = 16 B");
#endif
