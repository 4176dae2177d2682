/* The GPU op of norm_rmsnorm (gpu.cu), for plugin.c's cuda and hip variants. */
#ifndef SY_NORM_RMSNORM_GPU_H
#define SY_NORM_RMSNORM_GPU_H

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest pad_to_multiple the GPU rmsnorm accepts: the host version's, so that both declare the same caps. */
enum { SY_NORM_RMSNORM_GPU_MAX_PAD = 4096 };

extern const sy_norm_ops sy_norm_rmsnorm_gpu_ops;

#ifdef __cplusplus
}
#endif
#endif
