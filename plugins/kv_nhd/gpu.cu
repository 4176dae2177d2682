/* kv_nhd on the GPU: the shared write / gather kernels (plugins/common/kv_store_gpu.cuh) with the
 * layout fixed. */
#include "kv_store_gpu.cuh"

SY_KV_GPU_DEFINE_OPS(sy_kv_nhd_gpu_ops, SY_LAYOUT_NHD);
