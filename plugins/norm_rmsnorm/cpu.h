#ifndef SY_NORM_RMSNORM_CPU_H
#define SY_NORM_RMSNORM_CPU_H

#include "switchyard/plugin.h"

/* Largest pad_to_multiple the host rmsnorm accepts. */
enum { SY_NORM_RMSNORM_CPU_MAX_PAD = 4096 };

extern const sy_norm_ops sy_norm_rmsnorm_cpu_ops;

#endif
