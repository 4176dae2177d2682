/* The GPU op of norm_rmsnorm (gpu.cu), for plugin.c's cuda and hip variants. */
#ifndef SY_NORM_RMSNORM_GPU_H
#define SY_NORM_RMSNORM_GPU_H

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif


extern const sy_norm_ops sy_norm_rmsnorm_gpu_ops;

#ifdef __cplusplus
}
#endif
#endif
