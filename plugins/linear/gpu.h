/* The GPU ops of the linear plugin (gpu.cu), for plugin.c's cuda and hip variants. */
#ifndef SY_LINEAR_GPU_H
#define SY_LINEAR_GPU_H

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuda: cuBLAS (cublasGemmEx, f32 accumulation). hip: the portable tiled kernel below, because
 * the ROCm that builds here (Debian's HIP 5.2) has neither hipBLAS nor rocBLAS. */
extern const sy_linear_ops sy_linear_gpu_ops;
/* The portable tiled kernel on either toolkit; on cuda it is the plugin "linear_tiled", so that
 * the kernel the hip library runs is tested on a real GPU too. */
extern const sy_linear_ops sy_linear_gpu_tiled_ops;

sy_status sy_linear_gpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_linear_gpu_fini(void *ctx);

#ifdef __cplusplus
}
#endif
#endif
